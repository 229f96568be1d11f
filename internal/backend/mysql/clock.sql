-- The database's clock, which judges every lease's expiry, in µs since
-- 1970 (distlock doctor compares it with ours).
SELECT CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)
