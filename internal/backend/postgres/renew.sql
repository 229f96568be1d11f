-- Extend our live lease to a full TTL from now (the database's clock).
-- An expired lease is lost, even if nobody took it over yet.
-- $1 prefix, $2 key, $3 slot, $4 owner, $5 ttl_ms. One row updated: renewed.
UPDATE distlock_lease
SET expires_at = clock_timestamp() + $5::bigint * interval '1 millisecond'
WHERE prefix = $1 AND lock_key = $2 AND slot = $3::integer AND owner = $4
  AND expires_at > clock_timestamp()
