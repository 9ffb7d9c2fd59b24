-- '=' on a high-cardinality id: bloom_filter hashes the value exactly as Parquet does
SELECT id, ts, service, level FROM logs WHERE trace_id = '5bc41c01a426da0658b7893cbf42f18b' ORDER BY id;
