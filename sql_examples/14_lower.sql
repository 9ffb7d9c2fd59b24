-- An index on lower(msg) answers hasTokenCaseInsensitive and lower(msg) LIKE
SELECT count() FROM logs WHERE hasTokenCaseInsensitive(msg, 'KRAKEN');
SELECT count() FROM logs WHERE lower(msg) LIKE '% kraken sighted%';
