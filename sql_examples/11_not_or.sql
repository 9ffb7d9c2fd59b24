-- OR across two indexes in one RPN (token index OR bloom_filter), and NOT on an unindexed column
SELECT count(), sum(id) FROM logs
WHERE (hasToken(msg, 'kraken') OR trace_id = '5bc41c01a426da0658b7893cbf42f18b') AND NOT level = 'DEBUG';
