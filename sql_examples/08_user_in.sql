-- IN on a UInt64 column: the bloom filter hashes the INT64 PLAIN bytes
SELECT user_id, count() AS n, min(ts), max(ts) FROM logs
WHERE user_id IN (1121888, 1500000, 1999999, 42424242)
GROUP BY user_id ORDER BY user_id;
