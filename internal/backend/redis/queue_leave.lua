-- Leave the queue (the wait ended without the lock) and wake the waiter
-- that becomes first. KEYS[1] queue, KEYS[2] alive, KEYS[3] waiting.
-- ARGV: owner, wake channel prefix. Returns 1.
q_leave(KEYS[1], KEYS[2], KEYS[3], ARGV[1], q_head(KEYS[1]), ARGV[2])
return 1
