-- Keep the lock for a while with no renewals (min-hold, CI handles).
-- KEYS[1] lock hash; ARGV: owner, ms, mode. Returns 1 held, 0 not ours.
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'hold', ARGV[3], 'ttl_ms', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
