-- One step of a fair wait for a mutex: join the queue (or refresh our
-- place), and take the lock if it is free and we are the first live waiter.
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] queue, KEYS[4] alive,
-- KEYS[5] waiting.
-- ARGV: owner, ttl_ms, host, pid, user, command, note, place_ms (how long
-- our place lasts without a refresh), wake channel prefix.
-- Returns {1, token} acquired; {0, holder-fields, pttl, first, next-waiter}
-- busy (holder-fields empty and pttl -2 when the lock is free but another
-- waiter is first; first is 1 when we are first in line; next-waiter is
-- "host<TAB>pid" of the first waiter, or ''); {-1, limit} the key is a
-- semaphore (we left the queue).
local now_ms = q_now_ms()
local before = q_head(KEYS[3])
q_prune(KEYS[3], KEYS[4], KEYS[5], now_ms)
local limit = redis.call('HGET', KEYS[1], 'limit')
if limit then
  q_remove(KEYS[3], KEYS[4], KEYS[5], ARGV[1])
  q_wake_new_head(KEYS[3], before, ARGV[9], ARGV[1])
  return {-1, limit}
end
q_join(KEYS[3], KEYS[4], KEYS[5], ARGV[1], now_ms, tonumber(ARGV[8]), ARGV[3] .. '\t' .. ARGV[4])
local first = q_wake_new_head(KEYS[3], before, ARGV[9], ARGV[1])
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then
  local is_first = 0
  if first == ARGV[1] then is_first = 1 end
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]), is_first,
    redis.call('HGET', KEYS[5], first) or ''}
end
if not owner and first ~= ARGV[1] then
  -- Free, but not our turn: make sure the first waiter knows.
  redis.call('PUBLISH', ARGV[9] .. first, 'free')
  return {0, {}, -2, 0, redis.call('HGET', KEYS[5], first) or ''}
end
local tok
if owner then
  -- Our own earlier attempt got through but its reply was lost.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  tok = redis.call('HGET', KEYS[1], 'token')
else
  tok = grant(KEYS[1], KEYS[2])
end
q_remove(KEYS[3], KEYS[4], KEYS[5], ARGV[1])
q_wake_new_head(KEYS[3], ARGV[1], ARGV[9], ARGV[1])
return {1, tok}
