-- How many waiters have a place in a key's line, places not yet pruned
-- included (for tests and tools). Arguments: prefix, key.
SELECT COUNT(*) FROM distlock_waiter WHERE prefix = ? AND lock_key = ?
