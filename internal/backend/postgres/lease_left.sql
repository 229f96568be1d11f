-- The µs left on key $2's lease with token $3 by the database's clock,
-- negative once it has expired (for tests and tools). $1 prefix, $2 key,
-- $3 token. At most one row.
SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint
FROM distlock_lease WHERE prefix = $1 AND lock_key = $2 AND token = $3
