-- Every live lease of $2, oldest (lowest token) first: a mutex's one, or
-- each held slot of a semaphore, then its limit and slot. The first is the
-- key's holder. $1 prefix, $2 key.
SELECT lock_key, owner, token, host, pid, username, command, note,
       (extract(epoch FROM acquired_at) * 1000000)::bigint, ttl_ms, hold,
       (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = $1 AND lock_key = $2 AND expires_at > clock_timestamp()
ORDER BY token
