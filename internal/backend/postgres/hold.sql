-- Keep our live lease for $5 ms from now with no renewals, marked with why
-- ($6: min-hold, handle).
-- $1 prefix, $2 key, $3 slot, $4 owner, $5 ms, $6 mode. One row updated: held.
UPDATE distlock_lease
SET expires_at = clock_timestamp() + $5::bigint * interval '1 millisecond', ttl_ms = $5::bigint, hold = $6
WHERE prefix = $1 AND lock_key = $2 AND slot = $3::integer AND owner = $4
  AND expires_at > clock_timestamp()
