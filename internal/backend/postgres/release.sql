-- Delete our row and wake the waiters (LISTEN $5; sent at commit).
-- $1 prefix, $2 key, $3 slot, $4 owner, $5 channel.
-- One row per deleted row: whether it was still live.
WITH gone AS (
    DELETE FROM distlock_lease
    WHERE prefix = $1 AND lock_key = $2 AND slot = $3::integer AND owner = $4
    RETURNING expires_at > clock_timestamp() AS live
)
SELECT live, pg_notify($5, 'released') IS NULL FROM gone
