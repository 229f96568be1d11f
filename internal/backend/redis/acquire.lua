-- Take a slot of a lock of limit N (a mutex: N = 1), in one round trip:
-- a try-once (place_ms 0) or one step of a fair wait (queue.go).
--
-- A step joins the key's queue (or refreshes our place) and takes the
-- lowest free slot only if we are the first live waiter; the first takes
-- a slot and leaves the line, which makes the next one first (woken on its
-- own channel), so freed slots go to the waiters in arrival order. A
-- try-once never joins the line and is busy while live waiters are queued:
-- it must not take a slot from the first in line between a release and
-- that waiter's next step. Tokens come from the key's one counter, so
-- they rise across every acquisition of the key, mutex and semaphore.
-- Prepended: clock_lib.lua, grant_lib.lua, queue_lib.lua, slots_lib.lua,
-- take_lib.lua.
-- KEYS[1] lock hash, KEYS[2] fencing counter (no TTL), KEYS[3] queue,
-- KEYS[4] alive, KEYS[5] waiting, KEYS[6..5+N] slot hashes (slots_lib.lua).
-- ARGV: owner, ttl_ms, host, pid, user, command, note, N, place_ms (how
-- long our place lasts without a refresh; 0: a try-once), wake channel
-- prefix.
-- Returns {1, token, slot} acquired; {0, holder-fields, holder-pttl, first,
-- next-waiter, shortest-slot-pttl} busy (holder-fields empty when no slot
-- is held but another waiter is first; first is 1 when we are first in
-- line; next-waiter is the first one's "host<TAB>pid" or ''); {-1,
-- limit-in-use} the key is held with another limit (we left the queue).
local me, limit, place, wake = ARGV[1], tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
local slots = s_slots(6, limit)
local now = now_ms()
local before = q_head(KEYS[3])
q_prune(KEYS[3], KEYS[4], KEYS[5], now)
local conflict = sem_conflict(KEYS[1], limit)
local free, mine, minp = sem_scan(slots, me)
if conflict or mine then
  q_leave(KEYS[3], KEYS[4], KEYS[5], me, before, wake)
  if conflict then return {-1, conflict} end
  -- Our own earlier attempt got through but its reply was lost.
  return {1, sem_take(KEYS[1], KEYS[2], slots, mine, limit, true), mine - 1}
end
if place > 0 then
  q_join(KEYS[3], KEYS[4], KEYS[5], me, now, place, ARGV[3] .. '\t' .. ARGV[4])
end
local first = q_wake_new_head(KEYS[3], before, wake, me)
if (first and first ~= me) or not free then
  local is_first, next = 0, ''
  if first == me then is_first = 1 end
  if first then next = redis.call('HGET', KEYS[5], first) or '' end
  -- A slot is free, but not for us: make sure the first waiter knows.
  if free and place > 0 then redis.call('PUBLISH', wake .. first, 'free') end
  local f, p = sem_holder(KEYS[1], slots, limit)
  return {0, f, p, is_first, next, minp}
end
local tok = sem_take(KEYS[1], KEYS[2], slots, free, limit, false)
q_leave(KEYS[3], KEYS[4], KEYS[5], me, me, wake)
return {1, tok, free - 1}
