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
return {1, grant(KEYS[1], KEYS[2])}
