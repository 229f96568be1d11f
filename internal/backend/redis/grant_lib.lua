-- Shared by the scripts that grant a slot (acquire.lua, Redlock's
-- acquire); prepended to each of them, so the token rule lives here only.
-- ARGV[1..7] of those scripts: owner, ttl_ms, host, pid, user, command, note.

-- grant makes hash h the caller's holder record with a fresh fencing token
-- and a TTL of ttl_ms, and returns the token. The token is
-- max(counter + 1, server time in µs): it rises even if Redis restarted
-- empty or failed over to a lagging replica whose clock is sane.
local function grant(h, counter)
  local now = now_us()
  local tok = (tonumber(redis.call('GET', counter)) or 0) + 1
  if now > tok then tok = now end
  tok = string.format('%.0f', tok)
  redis.call('SET', counter, tok)
  redis.call('HSET', h, 'owner', ARGV[1], 'token', tok, 'host', ARGV[3], 'pid', ARGV[4],
    'user', ARGV[5], 'cmd', ARGV[6], 'note', ARGV[7],
    'acquired_ms', string.format('%.0f', math.floor(now / 1000)), 'ttl_ms', ARGV[2])
  redis.call('PEXPIRE', h, ARGV[2])
  return tok
end
