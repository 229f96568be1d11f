-- Break a lock of limit N: the holder with a given token, or every holder.
-- Prepended: slots_lib.lua.
-- KEYS[1] lock hash, KEYS[2..1+N] slot hashes.
-- ARGV: token ('0' = every holder), N, channel.
-- Returns {0} free; {1, fields, pttl} broken (the holder with the token;
-- with '0' the lock hash, which for a semaphore describes the oldest);
-- {2, fields, pttl} no holder has the token (the lock hash's); {-3} the
-- key is no longer held with limit N (ask again).
local limit = tonumber(ARGV[2])
local slots = s_slots(2, limit)
if tonumber(redis.call('HGET', KEYS[1], 'limit') or 1) ~= limit then return {-3} end
local f, p = redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])
if #f == 0 then return {0} end
if ARGV[1] == '0' then
  for i = 1, #slots do redis.call('DEL', slots[i]) end
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[3], 'broken')
  return {1, f, p}
end
for i = 1, #slots do
  if redis.call('HGET', slots[i], 'token') == ARGV[1] then
    f, p = redis.call('HGETALL', slots[i]), redis.call('PTTL', slots[i])
    redis.call('DEL', slots[i])
    sem_mark(KEYS[1], slots, limit)
    redis.call('PUBLISH', ARGV[3], 'broken')
    return {1, f, p}
  end
end
return {2, f, p}
