-- The holder (oldest live lease) of every key of prefix $1 that starts
-- with $2, then its limit and slot. $1 prefix, $2 key prefix ('' = all).
SELECT DISTINCT ON (lock_key)
       lock_key, owner, token, host, pid, username, command, note,
       (extract(epoch FROM acquired_at) * 1000000)::bigint, ttl_ms, hold,
       (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = $1 AND starts_with(lock_key, $2) AND expires_at > clock_timestamp()
ORDER BY lock_key, token
