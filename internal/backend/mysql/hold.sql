-- Keep our live lease for ms from now with no renewals, marked with why
-- (min-hold, handle). Arguments: ms, ms (again), mode, prefix, key, slot,
-- owner. One row matched: held.
UPDATE distlock_lease SET expires_us = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + ? * 1000, ttl_ms = ?, hold = ?
WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
