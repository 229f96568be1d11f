-- Extend our live lease to a full TTL from now (the database's clock, µs
-- since 1970). An expired lease is lost, even if nobody took it over yet.
-- Arguments: ttl_ms, prefix, key, slot, owner. One row matched: renewed.
UPDATE distlock_lease SET expires_us = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + ? * 1000
WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
