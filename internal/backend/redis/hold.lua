-- Keep slot i of a lock of limit N for a while with no renewals
-- (min-hold, CI handles), marked with mode so status can say why nobody
-- renews it, and refresh a semaphore's marker (it may describe this slot,
-- and must live as long as the longest-lived slot). Prepended:
-- slots_lib.lua.
-- KEYS[1] lock hash, KEYS[2..1+N] slot hashes.
-- ARGV: owner, ms, mode, i, N. Returns 1 held, 0 not ours.
local limit = tonumber(ARGV[5])
return s_owned(KEYS[1], s_slots(2, limit), ARGV[4], ARGV[1], limit, function(s)
  redis.call('HSET', s, 'hold', ARGV[3], 'ttl_ms', ARGV[2])
  redis.call('PEXPIRE', s, ARGV[2])
end)
