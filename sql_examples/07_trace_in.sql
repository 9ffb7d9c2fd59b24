-- IN over several ids: ANY of the values may be present
SELECT trace_id, count() AS n FROM logs
WHERE trace_id IN ('366224746d228e9d9ca6905e4f9c8326', 'caf6ef61006f9238d1ccb4d1985213ec',
                   'f3e96e40e41ec7c64d700554141ebe0c', '00000000000000000000000000000000')
GROUP BY trace_id ORDER BY trace_id;
