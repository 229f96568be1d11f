-- Shared by every script that touches a holder record; prepended to each.
-- A mutex is a semaphore of one (limit 1).
--
-- A lock of limit N keeps its holders in N slot hashes, each with the
-- lease's TTL, holding the holder's record (grant_lib.lua). A mutex's one
-- slot is the lock hash <prefix>:{KEY} itself, with no limit field. A
-- semaphore's (N > 1) are <prefix>:{KEY}:slot:<i>, i = 0..N-1, with limit
-- and slot fields; while any is held the lock hash is the semaphore's
-- marker: owner "semaphore:<N>", limit <N>, and a copy of the oldest slot
-- holder's fields (lowest token), living exactly as long as the
-- longest-lived slot. So a mutex acquirer finds the key busy, `status` and
-- `list` describe the oldest holder, and every acquirer sees the limit in
-- use. "semaphore:<N>" is nobody's owner id, so no lease ever matches it.
-- Every script is given the lock hash and all N slot keys (for a mutex the
-- lock hash again), so each touches only keys it declares.

-- s_slots is the limit slot keys that start at KEYS[from].
local function s_slots(from, limit)
  local slots = {}
  for i = from, from + limit - 1 do slots[#slots + 1] = KEYS[i] end
  return slots
end

-- sem_mark re-points the marker lkey at the oldest held slot among slots
-- and gives it the longest remaining TTL among them; with no slot held it
-- deletes the marker. A mutex (limit 1, or a mutex holding lkey) is never
-- touched.
local function sem_mark(lkey, slots, limit)
  if limit <= 1 then return end
  local best, besttok, maxp = nil, nil, -1
  for i = 1, #slots do
    local tok = redis.call('HGET', slots[i], 'token')
    if tok then
      local p = redis.call('PTTL', slots[i])
      if p > maxp then maxp = p end
      tok = tonumber(tok)
      if besttok == nil or tok < besttok then best, besttok = i, tok end
    end
  end
  if redis.call('HGET', lkey, 'owner') and not redis.call('HGET', lkey, 'limit') then
    return
  end
  redis.call('DEL', lkey)
  if best == nil or maxp <= 0 then return end
  redis.call('HSET', lkey, unpack(redis.call('HGETALL', slots[best])))
  redis.call('HSET', lkey, 'owner', 'semaphore:' .. limit, 'limit', limit)
  redis.call('PEXPIRE', lkey, maxp)
end

-- s_owned runs change on slot i (0-based, as a string) if owner holds
-- it, then refreshes the marker. Returns 1 done, 0 not ours.
local function s_owned(lkey, slots, i, owner, limit, change)
  local s = slots[tonumber(i) + 1]
  if redis.call('HGET', s, 'owner') ~= owner then return 0 end
  change(s)
  sem_mark(lkey, slots, limit)
  return 1
end
