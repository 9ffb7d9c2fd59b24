-- hasToken of a rare word: the token indexes keep only the granules that may hold it
SELECT count() FROM logs WHERE hasToken(msg, 'kraken');
