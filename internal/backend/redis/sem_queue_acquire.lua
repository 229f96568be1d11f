-- One step of a fair wait for a semaphore's slot: join the key's queue (or
-- refresh our place), and take the lowest free slot only if we are the
-- first live waiter. The first takes a slot and leaves the line, which
-- makes the next one first (woken on its own channel): freed slots go to
-- the waiters in arrival order.
-- KEYS[1] lock hash (mutex or marker), KEYS[2] fencing counter, KEYS[3]
-- queue, KEYS[4] alive, KEYS[5] waiting, KEYS[6..] slot hashes 0..limit-1.
-- ARGV: owner, ttl_ms, host, pid, user, command, note, limit, place_ms (how
-- long our place lasts without a refresh), wake channel prefix.
-- Returns {1, token, slot} acquired; {0, marker-fields, marker-pttl, first,
-- next-waiter, shortest-slot-pttl} busy (first is 1 when we are first in
-- line; next-waiter is the first one's "host<TAB>pid" or ''); {-1,
-- limit-in-use} the key is held with another limit (we left the queue).
local limit = tonumber(ARGV[8])
local slots = {}
for i = 6, #KEYS do slots[#slots + 1] = KEYS[i] end
local now_ms = q_now_ms()
local before = q_head(KEYS[3])
q_prune(KEYS[3], KEYS[4], KEYS[5], now_ms)
local conflict = sem_conflict(KEYS[1], limit)
local free, mine, minp = sem_scan(slots, limit, ARGV[1])
if conflict or mine then
  q_remove(KEYS[3], KEYS[4], KEYS[5], ARGV[1])
  q_wake_new_head(KEYS[3], before, ARGV[10], ARGV[1])
  if conflict then return {-1, conflict} end
  -- Our own earlier attempt got through but its reply was lost.
  return {1, sem_mine(KEYS[1], slots, mine, limit), mine - 1}
end
q_join(KEYS[3], KEYS[4], KEYS[5], ARGV[1], now_ms, tonumber(ARGV[9]), ARGV[3] .. '\t' .. ARGV[4])
local first = q_wake_new_head(KEYS[3], before, ARGV[10], ARGV[1])
if first ~= ARGV[1] or not free then
  local is_first = 1
  if first ~= ARGV[1] then
    is_first = 0
    -- A slot is free, but not for us: make sure the first waiter knows.
    if free then redis.call('PUBLISH', ARGV[10] .. first, 'free') end
  end
  local f, p = sem_holder(KEYS[1], slots, limit)
  return {0, f, p, is_first, redis.call('HGET', KEYS[5], first) or '', minp}
end
local tok = sem_take(KEYS[1], KEYS[2], slots, free, limit)
q_remove(KEYS[3], KEYS[4], KEYS[5], ARGV[1])
q_wake_new_head(KEYS[3], ARGV[1], ARGV[10], ARGV[1])
return {1, tok, free - 1}
