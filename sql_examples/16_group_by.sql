-- Aggregation over the rows that survive pruning and the exact predicate
SELECT level, count() AS n, uniqExact(service) AS services, avg(user_id) > 0 AS any_users
FROM logs WHERE hasToken(msg, 'kraken') GROUP BY level ORDER BY level;
