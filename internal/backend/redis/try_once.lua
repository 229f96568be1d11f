-- A mutex's try-once, in one round trip: take the lock if it is free and no
-- live waiter is queued for it (a try-once must not take the lock from the
-- first in line between a release and that waiter's next step), with a
-- fencing token that never goes backwards. Prepended: grant_lib.lua,
-- queue_lib.lua.
-- KEYS[1] lock hash, KEYS[2] fencing counter (no TTL), KEYS[3] queue,
-- KEYS[4] alive, KEYS[5] waiting.
-- ARGV: owner, ttl_ms, host, pid, user, command, note, wake channel prefix.
-- Returns {1, token} acquired; {0, holder-fields, pttl} held; {0,
-- holder-fields, pttl, next-waiter} waiters are queued; {-1, limit} the key
-- is a semaphore.
local before = q_head(KEYS[3])
q_prune(KEYS[3], KEYS[4], KEYS[5], q_now_ms())
local limit = redis.call('HGET', KEYS[1], 'limit')
if limit then return {-1, limit} end
local first = q_wake_new_head(KEYS[3], before, ARGV[8], nil)
if first then
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('HGET', KEYS[5], first) or ''}
end
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner == ARGV[1] then
    -- Our own earlier attempt got through but its reply was lost.
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, redis.call('HGET', KEYS[1], 'token')}
  end
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])}
end
return {1, grant(KEYS[1], KEYS[2])}
