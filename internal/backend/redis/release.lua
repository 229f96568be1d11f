-- Free the lock if it is still ours and wake the waiters.
-- KEYS[1] lock hash; ARGV: owner, channel ('' wakes nobody: Redlock giving
-- back a failed attempt's grants). Returns 1 released, 0 not ours.
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], 'released') end
  return 1
end
return 0
