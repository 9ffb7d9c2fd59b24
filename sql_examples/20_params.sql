-- query parameters: {name:Type} takes a typed value (db.sql(sql, params=...), --param_trace=..., or SET param_trace = ...); a value is never spliced into the SQL text
SET param_trace = '5bc41c01a426da0658b7893cbf42f18b';
SET param_quiet = 'ERROR';
SELECT id, service, level FROM logs WHERE trace_id = {trace:String} AND level != {quiet:String} ORDER BY id;
SELECT count() FROM logs WHERE trace_id = {trace:String} OR service = {trace:String};
