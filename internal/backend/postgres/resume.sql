-- Find the live lease of owner $3 with token $4 (a handle's).
-- $1 prefix, $2 key, $3 owner, $4 token. At most one row: slot, limit, ttl_ms.
SELECT slot, lock_limit, ttl_ms FROM distlock_lease
WHERE prefix = $1 AND lock_key = $2 AND owner = $3 AND token = $4::bigint
  AND expires_at > clock_timestamp()
