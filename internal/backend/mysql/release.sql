-- Delete our live row (an expired row of ours is left to the next
-- acquirer). Arguments: prefix, key, slot, owner. One row: released.
DELETE FROM distlock_lease
WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
