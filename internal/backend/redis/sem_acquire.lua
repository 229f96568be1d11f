-- A semaphore's try-once, in one round trip: take the lowest free slot,
-- with a fencing token from the key's counter (the mutex's, so tokens rise
-- across every acquisition), unless live waiters are queued for the key: as
-- for the mutex (try_once.lua), a try-once never takes a slot from the
-- first in line, and never joins the line.
-- KEYS[1] lock hash (mutex or marker), KEYS[2] fencing counter (no TTL),
-- KEYS[3] queue, KEYS[4] alive, KEYS[5] waiting, KEYS[6..] slot hashes
-- 0..limit-1.
-- ARGV: owner, ttl_ms, host, pid, user, command, note, limit, wake channel
-- prefix.
-- Returns {1, token, slot} acquired; {0, marker-fields, marker-pttl,
-- shortest-slot-pttl, next-waiter} busy (every slot held, or waiters
-- queued: next-waiter is the first one's "host<TAB>pid", else ''); {-1,
-- limit-in-use} the key is held with another limit (1: as a mutex).
local limit = tonumber(ARGV[8])
local slots = {}
for i = 6, #KEYS do slots[#slots + 1] = KEYS[i] end
local conflict = sem_conflict(KEYS[1], limit)
if conflict then return {-1, conflict} end
local before = q_head(KEYS[3])
q_prune(KEYS[3], KEYS[4], KEYS[5], q_now_ms())
local free, mine, minp = sem_scan(slots, limit, ARGV[1])
if mine then return {1, sem_mine(KEYS[1], slots, mine, limit), mine - 1} end
local first = q_wake_new_head(KEYS[3], before, ARGV[9], nil)
if first or not free then
  local f, p = sem_holder(KEYS[1], slots, limit)
  local next = ''
  if first then next = redis.call('HGET', KEYS[5], first) or '' end
  return {0, f, p, minp, next}
end
return {1, sem_take(KEYS[1], KEYS[2], slots, free, limit), free - 1}
