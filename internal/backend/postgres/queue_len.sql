-- How many waiters have a place in key $2's line, places not yet pruned
-- included (for tests and tools). $1 prefix, $2 key.
SELECT count(*) FROM distlock_waiter WHERE prefix = $1 AND lock_key = $2
