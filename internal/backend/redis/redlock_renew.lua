-- Redlock: renew (or hold) a lease on one master, and write the lease's
-- fencing token into the record and raise the counter to it (an acquire
-- writes the quorum's token back this way, so the next holder's quorum,
-- which intersects ours, grants a greater one; a master whose grant landed
-- but whose reply was lost carries the token it granted itself until the
-- first renewal). If the key is free here because this master lost its
-- data after the lease was granted (its boot marker is younger than the
-- lease by more than same_boot_ms: it restarted empty or was flushed
-- since), say so, and take it back only when asked: the client asks only
-- once the other masters' answers show the lease still ours
-- (redlock_lease.go, mayTakeBack), since the loss may have erased a
-- release or a break too.
-- A key released or broken here is never taken back: its holder must
-- learn that it is no longer ours. Prepended: clock_lib.lua,
-- redlock_lib.lua.
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] boot marker,
-- KEYS[4] TTL ledger.
-- ARGV: owner, ttl_ms, token, hold mode ('' renews), lease age ms (since
-- the grant, by the holder's clock), same_boot_ms, take back ('1' to take
-- the key back where this master lost it, '' to only say so), then the
-- record's other fields as name, value pairs (used when the key is taken
-- back).
-- Returns {1 renewed | 2 taken back | 3 lost here since the grant, not
-- taken back | 4 free here, and this master kept its data since the grant
-- (released, broken or expired here, or never ours here) | 0 another
-- holder's, marker age ms, longest live TTL ms (before this call)}.
local now = now_ms()
local age, longest = rl_state(KEYS[3], KEYS[4], now)
local owner = redis.call('HGET', KEYS[1], 'owner')
local res = 1
if owner and owner ~= ARGV[1] then return {0, age, longest} end
if not owner then
  if age + tonumber(ARGV[6]) >= tonumber(ARGV[5]) then return {4, age, longest} end
  if ARGV[7] ~= '1' then return {3, age, longest} end
  res = 2
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1])
  for i = 8, #ARGV - 1, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
redis.call('HSET', KEYS[1], 'token', ARGV[3], 'ttl_ms', ARGV[2])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'hold', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local c = tonumber(redis.call('GET', KEYS[2])) or 0
if tonumber(ARGV[3]) > c then redis.call('SET', KEYS[2], ARGV[3]) end
rl_note(KEYS[4], now, tonumber(ARGV[2]))
return {res, age, longest}
