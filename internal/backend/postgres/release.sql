-- Delete our row, live or expired, and wake the waiters (LISTEN $5; sent
-- at commit). $1 prefix, $2 key, $3 slot, $4 owner, $5 channel.
-- One row when the row deleted was still live: released. (A WITH query
-- that calls a volatile function is computed whole, never folded into the
-- outer query: the NOTIFY goes out for an expired row too.)
WITH gone AS (
    DELETE FROM distlock_lease
    WHERE prefix = $1 AND lock_key = $2 AND slot = $3::integer AND owner = $4
    RETURNING expires_at > clock_timestamp() AS live
), woken AS (
    SELECT live, pg_notify($5, 'released') IS NULL AS sent FROM gone
)
SELECT 1 FROM woken WHERE live
