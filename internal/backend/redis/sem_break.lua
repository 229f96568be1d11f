-- Break a semaphore: the holder with a given token, or every holder.
-- KEYS[1] lock hash (the marker), KEYS[2..] slot hashes 0..limit-1.
-- ARGV: token ('0' = every holder), limit, channel.
-- Returns {1, fields, pttl} broken (the holder with the token; with '0' the
-- marker, which describes the oldest), {2, marker-fields, pttl} no holder
-- has the token, {-3} the key is no longer a semaphore of this limit (ask
-- again).
local slots = {}
for i = 2, #KEYS do slots[#slots + 1] = KEYS[i] end
if redis.call('HGET', KEYS[1], 'limit') ~= ARGV[2] then return {-3} end
if ARGV[1] == '0' then
  local f, p = redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])
  for i = 1, #slots do redis.call('DEL', slots[i]) end
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[3], 'broken')
  return {1, f, p}
end
for i = 1, #slots do
  if redis.call('HGET', slots[i], 'token') == ARGV[1] then
    local f, p = redis.call('HGETALL', slots[i]), redis.call('PTTL', slots[i])
    redis.call('DEL', slots[i])
    sem_mark(KEYS[1], slots, tonumber(ARGV[2]))
    redis.call('PUBLISH', ARGV[3], 'broken')
    return {1, f, p}
  end
end
return {2, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])}
