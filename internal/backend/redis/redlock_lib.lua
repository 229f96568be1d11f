-- Redlock's delayed restart, kept on each master; prepended to the Redlock
-- scripts (redlock_acquire.lua, redlock_renew.lua; docs/ARCHITECTURE.md,
-- "Redlock's delayed restart").
--
--   <prefix>:redlock:boot  string, no TTL: the server's time (ms) when a
--                          Redlock script first found it missing, i.e. when
--                          this master was first used or first used after
--                          it lost its data (an empty restart, a flush)
--   <prefix>:redlock:ttls  sorted set: member a TTL (ms) this master granted,
--                          renewed or held a lock for; score the moment the
--                          last such lease ends (ms); ended ones are dropped,
--                          and the set expires with its longest-lived lease
--
-- A master counts toward a quorum only once its boot marker is older than
-- the longest TTL of a lease still live on any master that answered: a
-- lease it may have lost when it restarted has ended by then, or been
-- taken back by its holder's renewal.

-- rl_state returns how long ago (ms) this master's boot marker was made
-- (0: made now) and the longest TTL (ms) among its live leases.
local function rl_state(boot, ttls, now)
  local b = tonumber(redis.call('GET', boot))
  if not b then
    redis.call('SET', boot, string.format('%.0f', now))
    b = now
  end
  redis.call('ZREMRANGEBYSCORE', ttls, '-inf', now)
  local longest = 0
  for _, m in ipairs(redis.call('ZRANGE', ttls, 0, -1)) do
    local v = tonumber(m)
    if v and v > longest then longest = v end
  end
  return now - b, longest
end

-- rl_note records that a lease of ttl ms is live here until now + ttl.
local function rl_note(ttls, now, ttl)
  local ends = now + ttl
  local s = tonumber(redis.call('ZSCORE', ttls, ttl))
  if not s or s < ends then
    redis.call('ZADD', ttls, string.format('%.0f', ends), ttl)
  end
  if redis.call('PTTL', ttls) < ttl then redis.call('PEXPIRE', ttls, ttl) end
end
