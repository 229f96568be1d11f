-- The live lease of a handle. Arguments: prefix, key, owner, token.
-- At most one row: slot, lock_limit, ttl_ms.
SELECT slot, lock_limit, ttl_ms FROM distlock_lease
WHERE prefix = ? AND lock_key = ? AND owner = ? AND token = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
