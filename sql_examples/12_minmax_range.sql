-- A time range: the minmax index on ts keeps only the granules whose [min, max] overlaps it
SELECT count(), min(id), max(id) FROM logs
WHERE ts >= '2024-01-01 13:00:00' AND ts < '2024-01-01 13:05:00';
