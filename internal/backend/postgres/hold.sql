-- Keep our live lease for $1 ms from now with no renewals, marked with why
-- ($3: min-hold, handle).
-- $1 ms, $2 ms (again), $3 mode, $4 prefix, $5 key, $6 slot, $7 owner.
-- One row updated: held.
UPDATE distlock_lease
SET expires_at = clock_timestamp() + $1::bigint * interval '1 millisecond', ttl_ms = $2::bigint, hold = $3
WHERE prefix = $4 AND lock_key = $5 AND slot = $6::integer AND owner = $7
  AND expires_at > clock_timestamp()
