-- Break $2: delete the live lease with token $3, or every lease of the key
-- when $3 is 0 (expired rows too), and wake the waiters (LISTEN $4).
-- $1 prefix, $2 key, $3 token (0 = any), $4 channel.
-- One row per live lease deleted, oldest first: the key, the holder
-- columns, its limit and slot. (A WITH query that calls a volatile
-- function is computed whole, never folded into the outer query: one
-- NOTIFY goes out when a live lease was deleted.)
WITH gone AS (
    DELETE FROM distlock_lease
    WHERE prefix = $1 AND lock_key = $2 AND ($3::bigint = 0 OR (token = $3::bigint AND expires_at > clock_timestamp()))
    RETURNING *, expires_at > clock_timestamp() AS live
), woken AS (
    SELECT pg_notify($4, 'broken') IS NULL AS sent FROM gone WHERE live LIMIT 1
)
SELECT lock_key, owner, token, host, pid, username, command, note,
       (extract(epoch FROM acquired_at) * 1000000)::bigint, ttl_ms, hold,
       (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,
       lock_limit, slot
FROM gone
WHERE live AND EXISTS (SELECT 1 FROM woken)
ORDER BY token
