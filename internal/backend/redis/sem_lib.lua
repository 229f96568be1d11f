-- Shared by the semaphore scripts (sem_*.lua); prepended to each of them.
--
-- While any slot of a semaphore is held, the key's lock hash (the one a
-- mutex would use) is the semaphore's marker: owner "semaphore:<limit>",
-- limit <limit>, and a copy of the oldest slot holder's fields (lowest
-- token), living exactly as long as the longest-lived slot. So a mutex
-- acquirer (try_once.lua) finds the key busy, `status` and `list` describe
-- the oldest holder, and every semaphore acquirer sees the limit in use.
-- The owner "semaphore:<limit>" is nobody's owner id, so no mutex lease
-- (renew.lua, release.lua, hold.lua, Resume) ever matches it.

-- sem_mark re-points the marker lkey at the oldest held slot among slots
-- and gives it the longest remaining TTL among them; with no slot held it
-- deletes the marker. A mutex holding lkey is never touched.
local function sem_mark(lkey, slots, limit)
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
