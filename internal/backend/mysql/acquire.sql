-- One attempt to take a free slot of a key, sent as one multi-statement
-- query: one round trip, one transaction, which the server runs to its
-- COMMIT without waiting for the client. The counter row's lock
-- serializes acquirers (of every key) until the commit. Expiry is judged
-- by the database's clock. Placeholders (filled in by the driver, escaped):
-- 1 prefix, 2 key, 3 owner, 4 ttl_ms, 5 limit, 6 host, 7 pid, 8 user,
-- 9 command, 10 note; each placeholder is numbered in a comment.
-- Result: one row: the limit in use when it is not ours, the granted slot
-- and token (NULL when not granted), the oldest live holder, and the ms
-- until the soonest live lease expires.
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
UPDATE distlock_token
SET value = LAST_INSERT_ID(GREATEST(value + 1, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)))
WHERE id = 1;
SET @dl_tok = LAST_INSERT_ID(), @dl_now = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
    @dl_prefix = ?, @dl_key = ?, @dl_owner = ?, @dl_ttl = ?, @dl_limit = ?; -- 1 2 3 4 5
-- expired leases free their slots
DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us <= @dl_now;
SET @dl_have = (SELECT MAX(lock_limit) FROM distlock_lease
                WHERE prefix = @dl_prefix AND lock_key = @dl_key AND lock_limit <> @dl_limit);
-- our own row: our earlier attempt got through but its answer was lost
SET @dl_mine = (SELECT slot FROM distlock_lease
                WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner = @dl_owner LIMIT 1);
SET @dl_slot = IF(@dl_have IS NOT NULL, NULL, COALESCE(@dl_mine, (
    WITH RECURSIVE s (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n + 1 < @dl_limit)
    SELECT MIN(n) FROM s
    WHERE n NOT IN (SELECT slot FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key))));
DELETE FROM distlock_lease
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND slot = @dl_slot AND owner = @dl_owner;
INSERT INTO distlock_lease
    (prefix, lock_key, slot, lock_limit, owner, token, acquired_us, expires_us, ttl_ms,
     hold, host, pid, username, command, note)
SELECT @dl_prefix, @dl_key, @dl_slot, @dl_limit, @dl_owner, @dl_tok, @dl_now, @dl_now + @dl_ttl * 1000, @dl_ttl,
       '', ?, ?, ?, ?, ? -- 6 7 8 9 10
FROM DUAL WHERE @dl_slot IS NOT NULL;
-- granted only if a row was inserted
SET @dl_slot = IF(ROW_COUNT() = 1, @dl_slot, NULL);
SELECT @dl_have, @dl_slot, IF(@dl_slot IS NULL, NULL, @dl_tok),
       h.owner, h.token, h.host, h.pid, h.username, h.command, h.note, h.acquired_us, h.ttl_ms, h.hold,
       (h.expires_us - @dl_now) DIV 1000,
       (SELECT (MIN(expires_us) - @dl_now) DIV 1000 FROM distlock_lease
        WHERE prefix = @dl_prefix AND lock_key = @dl_key)
FROM (SELECT 1 AS one) AS one
LEFT JOIN (SELECT * FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key
           ORDER BY token LIMIT 1) AS h ON TRUE;
COMMIT;
