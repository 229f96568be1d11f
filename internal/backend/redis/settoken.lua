-- Redlock: make the quorum's fencing token this node's too, if the lock is
-- still ours here. The token is the maximum the quorum's nodes granted;
-- writing it back to the quorum (and raising the counter to it) makes the
-- next holder's quorum, which intersects ours, grant a greater one.
-- KEYS[1] lock hash, KEYS[2] fencing counter; ARGV: owner, token.
-- Returns 1 written, 0 not ours.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[2])
local c = tonumber(redis.call('GET', KEYS[2])) or 0
if tonumber(ARGV[2]) > c then redis.call('SET', KEYS[2], ARGV[2]) end
return 1
