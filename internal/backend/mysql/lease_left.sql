-- The µs left on a key's lease with a token by the database's clock,
-- negative once it has expired (for tests and tools). Arguments: prefix,
-- key, token. At most one row.
SELECT expires_us - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) FROM distlock_lease WHERE prefix = ? AND lock_key = ? AND token = ?
