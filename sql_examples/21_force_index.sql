-- force_data_skipping_indices: the query runs only if the named indexes can prune it (else ClickHouse's INDEX_NOT_USED error); use_skip_indexes = 0 reads every granule
SELECT count() FROM logs WHERE trace_id = '5bc41c01a426da0658b7893cbf42f18b' AND http_status IN (200, 503) SETTINGS force_data_skipping_indices = 'trace_bf, status_set';
SELECT count() FROM logs WHERE trace_id = '5bc41c01a426da0658b7893cbf42f18b' SETTINGS use_skip_indexes = 0;
