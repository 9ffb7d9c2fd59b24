-- FORMAT JSONEachRow: a pruned query's rows as JSON lines, as ClickHouse writes them
SELECT id, ts, service, http_status, msg FROM logs WHERE hasToken(msg, 'kraken') ORDER BY id LIMIT 3 FORMAT JSONEachRow;
