-- LIKE whose pattern closes a whole token with separators: the token indexes can answer it too
SELECT count() FROM logs WHERE msg LIKE '% kraken sighted%';
