-- EXPLAIN indexes = 1: granules kept per index, and why an index did not help
EXPLAIN indexes = 1 SELECT count() FROM logs WHERE hasToken(msg, 'kraken') OR trace_id = '5bc41c01a426da0658b7893cbf42f18b';
