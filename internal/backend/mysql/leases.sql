-- Every live lease of a key, oldest (lowest token) first: the key, the
-- holder columns, its limit and slot. Arguments: prefix, key.
SELECT lock_key, owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)) DIV 1000,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = ? AND lock_key = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
ORDER BY token
