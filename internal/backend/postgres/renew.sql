-- Extend our live lease to a full TTL from now (the database's clock).
-- An expired lease is lost, even if nobody took it over yet.
-- $1 ttl_ms, $2 prefix, $3 key, $4 slot, $5 owner. One row updated: renewed.
UPDATE distlock_lease
SET expires_at = clock_timestamp() + $1::bigint * interval '1 millisecond'
WHERE prefix = $2 AND lock_key = $3 AND slot = $4::integer AND owner = $5
  AND expires_at > clock_timestamp()
