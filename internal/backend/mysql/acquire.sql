-- One attempt to take a free slot of a key, sent as one multi-statement
-- query: one round trip, one transaction, which the server runs to its
-- COMMIT without waiting for the client. The counter row's lock
-- serializes acquirers (of every key) until the commit. Expiry is judged
-- by the database's clock.
-- Fair waiting: waiters keep a place in distlock_waiter (a ticket in
-- arrival order, alive until refreshed no more). A slot is granted only
-- while fewer live waiters are ahead of us than there are free slots: a
-- try-once (waiting 0) has every live waiter ahead of it; a waiter
-- (waiting 1) those with a lower ticket, and it takes or refreshes its
-- place (alive place_ms more) when not granted, gives it up when granted.
-- Places not refreshed in time are pruned.
-- Placeholders (filled in by the driver, escaped), all in the first SET:
-- prefix, key, owner, ttl_ms, limit, host, pid, user, command, note,
-- waiting, place_ms.
-- Result: one row: the granted slot and token (NULL when not granted), the
-- limit in use when it is not ours, the oldest live holder, the ms until
-- the soonest live lease expires, and the first live waiter ahead of us
-- (host, pid).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
-- the token: max(last + 1, the clock of the database in µs), the rule of
-- every engine (lock.NextToken), with one counter for all keys, whose last
-- value is at least the last token of this key
UPDATE distlock_token
SET value = LAST_INSERT_ID(GREATEST(value + 1, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)))
WHERE id = 1;
SET @dl_tok = LAST_INSERT_ID(), @dl_now = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
    @dl_prefix = ?, @dl_key = ?, @dl_owner = ?, @dl_ttl = ?, @dl_limit = ?,
    @dl_host = ?, @dl_pid = ?, @dl_user = ?, @dl_command = ?, @dl_note = ?, @dl_waiting = ?, @dl_place = ?;
-- expired leases free their slots; places not refreshed in time are lost
DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us <= @dl_now;
DELETE FROM distlock_waiter
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner <> @dl_owner AND alive_us <= @dl_now;
SET @dl_have = (SELECT MAX(lock_limit) FROM distlock_lease
                WHERE prefix = @dl_prefix AND lock_key = @dl_key AND lock_limit <> @dl_limit);
-- our own row: our earlier attempt got through but its answer was lost
SET @dl_mine = (SELECT slot FROM distlock_lease
                WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner = @dl_owner LIMIT 1);
SET @dl_ticket = (SELECT ticket FROM distlock_waiter
                  WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner = @dl_owner);
SET @dl_ahead = (SELECT COUNT(*) FROM distlock_waiter
                 WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner <> @dl_owner
                   AND (@dl_waiting = 0 OR @dl_ticket IS NULL OR ticket < @dl_ticket));
SET @dl_free = @dl_limit - (SELECT COUNT(*) FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key);
SET @dl_slot = IF(@dl_have IS NOT NULL, NULL, COALESCE(@dl_mine, IF(@dl_ahead >= @dl_free, NULL, (
    WITH RECURSIVE s (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n + 1 < @dl_limit)
    SELECT MIN(n) FROM s
    WHERE n NOT IN (SELECT slot FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key)))));
DELETE FROM distlock_lease
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND slot = @dl_slot AND owner = @dl_owner;
INSERT INTO distlock_lease
    (prefix, lock_key, slot, lock_limit, owner, token, acquired_us, expires_us, ttl_ms,
     hold, host, pid, username, command, note)
SELECT @dl_prefix, @dl_key, @dl_slot, @dl_limit, @dl_owner, @dl_tok, @dl_now, @dl_now + @dl_ttl * 1000, @dl_ttl,
       '', @dl_host, @dl_pid, @dl_user, @dl_command, @dl_note
FROM DUAL WHERE @dl_slot IS NOT NULL;
-- granted only if a row was inserted
SET @dl_slot = IF(ROW_COUNT() = 1, @dl_slot, NULL);
-- a grant gives our place up; a waiter not granted takes or refreshes it
DELETE FROM distlock_waiter
WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner = @dl_owner AND @dl_slot IS NOT NULL;
INSERT INTO distlock_waiter (prefix, lock_key, owner, ticket, alive_us, host, pid)
SELECT @dl_prefix, @dl_key, @dl_owner, @dl_tok, @dl_now + @dl_place * 1000, @dl_host, @dl_pid
FROM DUAL WHERE @dl_waiting = 1 AND @dl_slot IS NULL
ON DUPLICATE KEY UPDATE alive_us = VALUES(alive_us);
SELECT @dl_slot, IF(@dl_slot IS NULL, NULL, @dl_tok), @dl_have,
       h.owner, h.token, h.host, h.pid, h.username, h.command, h.note, h.acquired_us, h.ttl_ms, h.hold,
       (h.expires_us - @dl_now) DIV 1000,
       (SELECT (MIN(expires_us) - @dl_now) DIV 1000 FROM distlock_lease
        WHERE prefix = @dl_prefix AND lock_key = @dl_key),
       n.host, n.pid
FROM (SELECT 1 AS one) AS one
LEFT JOIN (SELECT * FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key
           ORDER BY token LIMIT 1) AS h ON TRUE
LEFT JOIN (SELECT host, pid FROM distlock_waiter
           WHERE prefix = @dl_prefix AND lock_key = @dl_key AND owner <> @dl_owner AND alive_us > @dl_now
             AND (@dl_waiting = 0 OR @dl_ticket IS NULL OR ticket < @dl_ticket)
           ORDER BY ticket LIMIT 1) AS n ON TRUE;
COMMIT;
