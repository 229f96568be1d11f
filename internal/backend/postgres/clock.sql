-- The database's clock, which judges every lease's expiry, in µs since
-- 1970 (distlock doctor compares it with ours).
SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
