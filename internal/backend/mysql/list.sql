-- Every live lease of a prefix whose key starts with a key prefix (a LIKE
-- pattern, escape character '!'), by key then token: the key, the holder
-- columns, its limit and slot. Arguments: prefix, key prefix ('' = all).
SELECT lock_key, owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)) DIV 1000,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  AND lock_key LIKE CONCAT(REPLACE(REPLACE(REPLACE(?, '!', '!!'), '%', '!%'), '_', '!_'), '%') ESCAPE '!'
ORDER BY lock_key, token
