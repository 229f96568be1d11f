-- Shared by the fair-queue scripts (acquire.lua, queue_leave.lua);
-- prepended to each.
--
-- Waiters for a mutex, or for a semaphore's slots, queue in arrival order:
--   <lock>:queue    sorted set, owner -> ticket (arrival order)
--   <lock>:alive    sorted set, owner -> deadline (server ms); a waiter
--                   that stops refreshing its deadline is pruned, so a dead
--                   waiter cannot block the queue
--   <lock>:waiting  hash, owner -> "host<TAB>pid" (to name the next in line)
-- All share the lock's hash tag, so they live in its cluster slot.
-- Only the first live waiter listens for releases on the lock's channel;
-- the others sleep on their own channel <lock>:wake:<owner>, which is
-- published to when they become first. A release wakes one waiter.

local function q_head(q)
  return redis.call('ZRANGE', q, 0, 0)[1]
end

local function q_remove(q, alive, waiting, owner)
  redis.call('ZREM', q, owner)
  redis.call('ZREM', alive, owner)
  redis.call('HDEL', waiting, owner)
end

-- q_prune drops the waiters whose deadline has passed.
local function q_prune(q, alive, waiting, now)
  for _, o in ipairs(redis.call('ZRANGEBYSCORE', alive, '-inf', now)) do
    q_remove(q, alive, waiting, o)
  end
end

-- q_wake_new_head tells the first waiter it is first now, unless it was
-- first already (before) or is the caller. Returns the first waiter.
local function q_wake_new_head(q, before, wake_prefix, caller)
  local h = q_head(q)
  if h and h ~= before and h ~= caller then
    redis.call('PUBLISH', wake_prefix .. h, 'first')
  end
  return h
end

-- q_leave takes owner out of the queue and wakes the waiter that becomes
-- first (the first was before).
local function q_leave(q, alive, waiting, owner, before, wake_prefix)
  q_remove(q, alive, waiting, owner)
  q_wake_new_head(q, before, wake_prefix, owner)
end

-- q_join puts owner at the back of the queue unless it is there already,
-- and refreshes its deadline (place ms from now, server ms) and who it is
-- ("host<TAB>pid"). The queue keys outlive the longest-lived place, then
-- vanish.
local function q_join(q, alive, waiting, owner, now, place, who)
  if not redis.call('ZSCORE', q, owner) then
    local last = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
    local ticket = 1
    if last[2] then ticket = tonumber(last[2]) + 1 end
    redis.call('ZADD', q, ticket, owner)
  end
  redis.call('ZADD', alive, now + place, owner)
  redis.call('HSET', waiting, owner, who)
  for _, k in ipairs({q, alive, waiting}) do
    if redis.call('PTTL', k) < place then redis.call('PEXPIRE', k, place) end
  end
end
