-- Take the lock if it is free, with a fencing token that never goes backwards.
-- KEYS[1] lock hash, KEYS[2] fencing counter (no TTL)
-- ARGV: owner, ttl_ms, host, pid, user, command, note
-- Returns {1, token} when acquired, {0, holder-fields, pttl} when held.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner == ARGV[1] then
    -- Our own earlier attempt got through but its reply was lost.
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, redis.call('HGET', KEYS[1], 'token')}
  end
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])}
end
-- token = max(counter + 1, server time in µs): rises even if Redis restarted
-- empty or failed over to a lagging replica whose clock is sane.
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tok = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
if now_us > tok then tok = now_us end
tok = string.format('%.0f', tok)
redis.call('SET', KEYS[2], tok)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', tok, 'host', ARGV[3], 'pid', ARGV[4],
  'user', ARGV[5], 'cmd', ARGV[6], 'note', ARGV[7],
  'acquired_ms', string.format('%.0f', math.floor(now_us / 1000)), 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tok}
