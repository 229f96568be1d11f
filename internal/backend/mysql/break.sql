-- Delete the live lease with a token (token 0: every lease of the key,
-- expired ones too), in one round trip and one transaction. Arguments:
-- prefix, key, token. The live leases deleted, oldest first: the key, the
-- holder columns, its limit and slot.
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
SET @dl_prefix = ?, @dl_key = ?, @dl_token = ?;
SELECT lock_key, owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)) DIV 1000,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  AND (@dl_token = 0 OR token = @dl_token)
ORDER BY token FOR UPDATE;
DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key
  AND (@dl_token = 0 OR (token = @dl_token AND expires_us > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)));
COMMIT
