-- UTF-8: tokens keep bytes >= 0x80, n-grams count code points
SELECT count() FROM logs WHERE hasToken(msg, 'Zürich') AND msg LIKE '%東京%' AND hasToken(msg, 'kraken');
