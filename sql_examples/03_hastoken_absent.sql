-- hasToken of a word that is in no row: the adaptive sbbf index drops (almost) every granule
SELECT count() FROM logs WHERE hasToken(msg, 'zyzzyva');
