-- Extend slot i of a lock of limit N to a full TTL if it is still ours,
-- and refresh a semaphore's marker. Prepended: slots_lib.lua.
-- KEYS[1] lock hash, KEYS[2..1+N] slot hashes.
-- ARGV: owner, ttl_ms, i, N. Returns 1 renewed, 0 not ours.
local limit = tonumber(ARGV[4])
return s_owned(KEYS[1], s_slots(2, limit), ARGV[3], ARGV[1], limit, function(s)
  redis.call('PEXPIRE', s, ARGV[2])
end)
