-- Free a slot if it is still ours, refresh the marker and wake the waiters.
-- KEYS[1] lock hash, KEYS[2..] slot hashes 0..limit-1.
-- ARGV: owner, slot, limit, channel. Returns 1 released, 0 not ours.
local slots = {}
for i = 2, #KEYS do slots[#slots + 1] = KEYS[i] end
local s = slots[tonumber(ARGV[2]) + 1]
if redis.call('HGET', s, 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', s)
sem_mark(KEYS[1], slots, tonumber(ARGV[3]))
redis.call('PUBLISH', ARGV[4], 'released')
return 1
