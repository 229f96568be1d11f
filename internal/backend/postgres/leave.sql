-- A waiter gives its place in the key's line back (it got the lock some
-- other way, or stopped waiting). $1 prefix, $2 key, $3 owner.
DELETE FROM distlock_waiter WHERE prefix = $1 AND lock_key = $2 AND owner = $3
