-- Remove the lock whoever holds it, or only the holder with a given token.
-- KEYS[1] lock hash; ARGV: token ('0' = any), channel.
-- Returns {0} free, {1, fields, pttl} broken, {2, fields, pttl} other token.
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return {0} end
local pttl = redis.call('PTTL', KEYS[1])
if ARGV[1] ~= '0' and redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return {2, h, pttl}
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'broken')
return {1, h, pttl}
