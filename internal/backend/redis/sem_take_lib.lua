-- Shared by the scripts that take a semaphore slot (sem_acquire.lua,
-- sem_queue_acquire.lua); prepended after grant_lib.lua, queue_lib.lua and
-- sem_lib.lua. ARGV[1..7] of those scripts are grant's (owner, ttl_ms,
-- host, pid, user, command, note).

-- sem_conflict is the limit the key is held with when it is not limit (1:
-- it is held as a mutex), else nil.
local function sem_conflict(lkey, limit)
  local have = redis.call('HGET', lkey, 'limit')
  if redis.call('HGET', lkey, 'owner') and not have then return 1 end
  if have and tonumber(have) ~= limit then return tonumber(have) end
  return nil
end

-- sem_scan looks at the slots: the lowest free one, the caller's own (an
-- earlier attempt of ours got through but its reply was lost), and the
-- time left on the soonest-expiring slot of the others (-1: none).
local function sem_scan(slots, limit, owner)
  local free, mine, minp = nil, nil, -1
  for i = 1, limit do
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

-- sem_mine renews the caller's own slot i and returns its token.
local function sem_mine(lkey, slots, i, limit)
  redis.call('PEXPIRE', slots[i], ARGV[2])
  sem_mark(lkey, slots, limit)
  return redis.call('HGET', slots[i], 'token')
end

-- sem_take gives slot i to the caller with a fresh token and returns it.
local function sem_take(lkey, counter, slots, i, limit)
  local tok = grant(slots[i], counter)
  redis.call('HSET', slots[i], 'limit', limit, 'slot', i - 1)
  sem_mark(lkey, slots, limit)
  return tok
end

-- sem_holder is the busy answer's holder: the marker's fields and PTTL
-- (the marker is made first if a full semaphore has none).
local function sem_holder(lkey, slots, limit)
  if not redis.call('HGET', lkey, 'limit') then sem_mark(lkey, slots, limit) end
  return redis.call('HGETALL', lkey), redis.call('PTTL', lkey)
end
