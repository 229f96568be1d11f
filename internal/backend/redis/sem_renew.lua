-- Extend a slot to a full TTL if it is still ours, and refresh the marker.
-- KEYS[1] lock hash, KEYS[2..] slot hashes 0..limit-1.
-- ARGV: owner, ttl_ms, slot, limit. Returns 1 renewed, 0 not ours.
local slots = {}
for i = 2, #KEYS do slots[#slots + 1] = KEYS[i] end
local s = slots[tonumber(ARGV[3]) + 1]
if redis.call('HGET', s, 'owner') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', s, ARGV[2])
sem_mark(KEYS[1], slots, tonumber(ARGV[4]))
return 1
