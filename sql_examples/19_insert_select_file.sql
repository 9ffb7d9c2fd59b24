-- INSERT ... SELECT FROM file(): a CSV read with ClickHouse's schema inference (header detected, Nullable types) into an indexed table
DROP TABLE IF EXISTS services;
CREATE TABLE services (service String, team String, tier UInt8, launched Date, INDEX team_bf team TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY service SETTINGS index_granularity = 4;
INSERT INTO services SELECT service, team, tier, launched FROM file('sql_examples/data/services.csv') WHERE tier < 3;
SELECT team, count() AS services, min(launched) AS first FROM services WHERE team IN ('payments', 'identity') GROUP BY team ORDER BY team;
SELECT service, tier FROM file('sql_examples/data/services.csv', CSVWithNames, 'service String, team String, tier UInt8, launched Date') WHERE team = 'comms' ORDER BY service;
