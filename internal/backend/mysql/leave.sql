-- A waiter gives its place in the key's line back (it got the lock some
-- other way, or stopped waiting). Arguments: prefix, key, owner.
DELETE FROM distlock_waiter WHERE prefix = ? AND lock_key = ? AND owner = ?
