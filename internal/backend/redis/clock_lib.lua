-- The server's clock, for every script that reads it; prepended before
-- the other libraries.

-- now_us is the server's TIME in µs (µs since 1970 stay below 2^53, so
-- Lua's doubles hold them exactly).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- now_ms is the server's TIME in whole ms.
local function now_ms()
  return math.floor(now_us() / 1000)
end
