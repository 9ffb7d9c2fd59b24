-- GROUP BY ... HAVING: the services where the rare token 'kraken' shows up more than twice, last seen
-- before 01:00 on Jan 2, with how many distinct users saw it. The token index prunes first; HAVING
-- filters the groups after the aggregation (`n` is count() aliased without AS, as ClickHouse allows;
-- max(ts) appears only in HAVING)
SELECT service, count() n, count(DISTINCT user_id) AS users, max(http_status) AS worst_status
FROM logs WHERE hasToken(msg, 'kraken')
GROUP BY service HAVING n > 2 AND max(ts) < '2024-01-02 01:00:00'
ORDER BY n DESC, service;
