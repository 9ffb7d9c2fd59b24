-- has(tags, ...) on an Array(String) column prunes with a bloom_filter over its elements, as ClickHouse indexes arrays; NOT has cannot prune (an empty array holds no element)
DROP TABLE IF EXISTS log_words;
CREATE TABLE log_words (ts DateTime, service String, words Array(String), INDEX words_bf words TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 1024;
INSERT INTO log_words SELECT ts, service, splitByChar(' ', msg) FROM logs;
SELECT count() FROM log_words WHERE has(words, 'kraken');
SELECT service, count() AS n FROM log_words WHERE hasAny(words, ['kraken', 'leviathan']) GROUP BY service ORDER BY service;
