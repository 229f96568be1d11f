-- Extend the lease to a full TTL if it is still ours.
-- KEYS[1] lock hash; ARGV: owner, ttl_ms. Returns 1 renewed, 0 not ours.
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
