-- Delete the live lease with a token (token 0: every lease of the key,
-- expired ones too), in one round trip and one transaction. Arguments:
-- prefix, key, token. The live leases deleted, oldest first: the key, the
-- holder columns, its limit and slot.
-- A break deletes exactly the live leases it reads and reports. Under READ
-- COMMITTED the locking read locks only the rows it finds: a lease an
-- acquirer commits after it (or is inserting, which the delete would wait
-- for) is not read, yet the delete of every lease of the key would take
-- it, breaking a holder nobody was told of. So the break first takes the
-- counter row, which every acquirer updates first (acquire.sql), and
-- holds it to its COMMIT: an acquirer that came first has committed its
-- lease before the break reads (and so is read and reported), one that
-- comes later waits for the break to end. Only acquirers insert leases;
-- renewals, holds and releases change live leases only, and the read
-- locks those it finds. One instant (@dl_now) says which leases are live
-- for the read and the delete alike, so that a lease that expires between
-- them is not reported yet left (--token).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
UPDATE distlock_token SET value = value WHERE id = 1;
SET @dl_prefix = ?, @dl_key = ?, @dl_token = ?, @dl_now = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);
SELECT lock_key, owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - @dl_now) DIV 1000,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us > @dl_now
  AND (@dl_token = 0 OR token = @dl_token)
ORDER BY token FOR UPDATE;
DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key
  AND (@dl_token = 0 OR (token = @dl_token AND expires_us > @dl_now));
COMMIT
