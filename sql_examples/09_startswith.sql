-- startsWith: the leading token 'DELETE' is whole (it starts the value), 'lock' is closed by ':'
SELECT count() FROM logs WHERE startsWith(msg, 'DELETE lock:ledger user=1121888 ');
