-- Free slot i of a lock of limit N if it is still ours, refresh a
-- semaphore's marker and wake the waiters. Prepended: slots_lib.lua.
-- KEYS[1] lock hash, KEYS[2..1+N] slot hashes.
-- ARGV: owner, i, N, channel ('' wakes nobody: Redlock giving back a
-- failed attempt's grants). Returns 1 released, 0 not ours.
local limit = tonumber(ARGV[3])
local n = s_owned(KEYS[1], s_slots(2, limit), ARGV[2], ARGV[1], limit, function(s)
  redis.call('DEL', s)
end)
if n == 1 and ARGV[4] ~= '' then redis.call('PUBLISH', ARGV[4], 'released') end
return n
