-- IS NULL: each index granule records whether it holds a NULL (http_status is NULL for the first 10% of the time)
SELECT count(), min(ts), max(ts) FROM logs WHERE http_status IS NULL;
