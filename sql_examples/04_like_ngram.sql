-- LIKE with a substring that is not a whole token: only the n-gram indexes can help ('raken sig' -> its 3-/4-grams)
SELECT count() FROM logs WHERE msg LIKE '%raken sig%';
