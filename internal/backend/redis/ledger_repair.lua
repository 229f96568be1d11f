-- Redlock's read-repair of one master's run ledger (ledger.go). KEYS[1]
-- the ledger hash; ARGV triples: id, what this master answered for it
-- ("" for nothing, else "=" and the value), the value to write. Each is
-- written only if the field still holds what was answered, so a repair
-- never replaces a write (or a repair) made since. Returns how many were
-- written.
local n = 0
for i = 1, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if (cur and '=' .. cur or '') == ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    n = n + 1
  end
end
return n
