-- Take the lowest free slot of a semaphore, with a fencing token from the
-- key's counter (the mutex's), so tokens rise across every acquisition.
-- KEYS[1] lock hash (mutex or marker), KEYS[2] fencing counter (no TTL),
-- KEYS[3..] slot hashes 0..limit-1.
-- ARGV: owner, ttl_ms, host, pid, user, command, note, limit
-- Returns {1, token, slot} acquired; {0, marker-fields, marker-pttl,
-- shortest-slot-pttl} all slots held; {-1, limit-in-use} the key is held
-- with another limit (1: as a mutex).
local limit = tonumber(ARGV[8])
local slots = {}
for i = 3, #KEYS do slots[#slots + 1] = KEYS[i] end
local have = redis.call('HGET', KEYS[1], 'limit')
if redis.call('HGET', KEYS[1], 'owner') and not have then return {-1, 1} end
if have and tonumber(have) ~= limit then return {-1, tonumber(have)} end
local free, mine, minp = nil, nil, -1
for i = 1, limit do
  local o = redis.call('HGET', slots[i], 'owner')
  if not o then
    if not free then free = i end
  elseif o == ARGV[1] then
    mine = i
  else
    local p = redis.call('PTTL', slots[i])
    if minp < 0 or p < minp then minp = p end
  end
end
if mine then
  -- Our own earlier attempt got through but its reply was lost.
  redis.call('PEXPIRE', slots[mine], ARGV[2])
  sem_mark(KEYS[1], slots, limit)
  return {1, redis.call('HGET', slots[mine], 'token'), mine - 1}
end
if not free then
  if not have then sem_mark(KEYS[1], slots, limit) end
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]), minp}
end
local tok = grant(slots[free], KEYS[2])
redis.call('HSET', slots[free], 'limit', ARGV[8], 'slot', free - 1)
sem_mark(KEYS[1], slots, limit)
return {1, tok, free - 1}
