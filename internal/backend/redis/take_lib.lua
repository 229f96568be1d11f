-- Shared by the scripts that take a slot (acquire.lua, and Redlock's
-- acquire); prepended after grant_lib.lua, queue_lib.lua and slots_lib.lua.
-- ARGV[1..7] of those scripts are grant's (owner, ttl_ms, host, pid, user,
-- command, note).

-- sem_conflict is the limit the key is held with when it is not limit,
-- else nil.
local function sem_conflict(lkey, limit)
  local have = tonumber(redis.call('HGET', lkey, 'limit'))
  if not have and redis.call('HGET', lkey, 'owner') then have = 1 end
  if have and have ~= limit then return have end
  return nil
end

-- sem_scan looks at the slots: the lowest free one, the caller's own (an
-- earlier attempt of ours got through but its reply was lost), and the
-- time left on the soonest-expiring slot of the others (-1: none).
local function sem_scan(slots, owner)
  local free, mine, minp = nil, nil, -1
  for i = 1, #slots do
    local o = redis.call('HGET', slots[i], 'owner')
    if not o then
      if not free then free = i end
    elseif o == owner then
      mine = i
    else
      local p = redis.call('PTTL', slots[i])
      if minp < 0 or p < minp then minp = p end
    end
  end
  return free, mine, minp
end

-- sem_take gives slot i to the caller with a fresh token (mine: renews the
-- caller's own) and returns the token.
local function sem_take(lkey, counter, slots, i, limit, mine)
  local tok
  if mine then
    redis.call('PEXPIRE', slots[i], ARGV[2])
    tok = redis.call('HGET', slots[i], 'token')
  else
    tok = grant(slots[i], counter)
    if limit > 1 then redis.call('HSET', slots[i], 'limit', limit, 'slot', i - 1) end
  end
  sem_mark(lkey, slots, limit)
  return tok
end

-- sem_holder is the busy answer's holder: the lock hash's fields and PTTL
-- (a full semaphore's marker is made first if it has none).
local function sem_holder(lkey, slots, limit)
  if not redis.call('HGET', lkey, 'limit') then sem_mark(lkey, slots, limit) end
  return redis.call('HGETALL', lkey), redis.call('PTTL', lkey)
end
