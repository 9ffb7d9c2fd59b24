-- multiSearchAny: ANY of the needles' token sets; one needle without a token would make it unusable
SELECT count() FROM logs WHERE multiSearchAny(msg, [' kraken ', ' zyzzyva ']);
