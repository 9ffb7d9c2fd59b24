-- hasToken of a frequent word: every granule may hold it, so nothing is pruned (and pruning costs little)
SELECT count() FROM logs WHERE hasToken(msg, 'timeout');
