-- May a try-once (--wait 0) go ahead? Not past live queued waiters: a
-- try-once must not take the lock from the first in line between a release
-- and that waiter's next step. Not on a semaphore either.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] alive, KEYS[4] waiting.
-- ARGV: wake channel prefix.
-- Returns {1} go ahead; {-1, limit} the key is a semaphore; {0,
-- holder-fields, pttl, next-waiter} waiters are queued.
local before = q_head(KEYS[2])
q_prune(KEYS[2], KEYS[3], KEYS[4], q_now_ms())
local limit = redis.call('HGET', KEYS[1], 'limit')
if limit then return {-1, limit} end
local first = q_wake_new_head(KEYS[2], before, ARGV[1], nil)
if not first then return {1} end
return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('HGET', KEYS[4], first) or ''}
