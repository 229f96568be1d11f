-- Keep a slot for a while with no renewals (--min-hold with --limit), and
-- refresh the marker (it may describe this slot, and must live as long as
-- the longest-lived slot).
-- KEYS[1] lock hash, KEYS[2..] slot hashes 0..limit-1.
-- ARGV: owner, ms, mode, slot, limit. Returns 1 held, 0 not ours.
local slots = {}
for i = 2, #KEYS do slots[#slots + 1] = KEYS[i] end
local s = slots[tonumber(ARGV[4]) + 1]
if redis.call('HGET', s, 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', s, 'hold', ARGV[3], 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', s, ARGV[2])
sem_mark(KEYS[1], slots, tonumber(ARGV[5]))
return 1
