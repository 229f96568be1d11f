-- Take a free slot of $2 (a mutex: $5 = 1, slot 0), judging expiry by the
-- database's clock, with a fencing token in the same statement: max(the
-- key's last token + 1, the database's clock in µs) (lock.NextToken, one
-- rule for every engine), kept in distlock_key_token, so that tokens rise
-- even after a point-in-time restore or a failover to a lagging replica. A slot is free when it has no row or its row has expired; a
-- row of our own ($3) is ours again (our earlier attempt got through but
-- its answer was lost). Nothing is granted while a live holder uses
-- another limit.
-- Fair waiting: waiters keep a place in distlock_waiter (a ticket in
-- arrival order, alive until refreshed no more). A slot is granted only
-- while fewer live waiters are ahead of us than there are free slots: a
-- try-once ($11 false) has every live waiter ahead of it; a waiter ($11
-- true) those with a lower ticket, and it takes or refreshes its place
-- (alive $12 ms more) when not granted, gives it up when granted. Places
-- not refreshed in time are pruned.
-- $1 prefix, $2 key, $3 owner, $4 ttl_ms, $5 limit, $6 host, $7 pid,
-- $8 user, $9 command, $10 note, $11 waiting, $12 place_ms.
-- One row: granted slot and token (NULL when not granted), the limit in
-- use when it is not $5, the oldest live holder, the ms until the soonest
-- live lease expires, and the first live waiter ahead of us (host, pid).
WITH live AS (
    SELECT * FROM distlock_lease
    WHERE prefix = $1 AND lock_key = $2 AND expires_at > clock_timestamp()
), mine AS (
    SELECT slot FROM live WHERE owner = $3 AND lock_limit = $5::integer
), other_limit AS (
    SELECT lock_limit FROM live WHERE lock_limit <> $5::integer LIMIT 1
), me AS (
    SELECT ticket FROM distlock_waiter WHERE prefix = $1 AND lock_key = $2 AND owner = $3
), ahead AS (
    SELECT * FROM distlock_waiter
    WHERE prefix = $1 AND lock_key = $2 AND owner <> $3 AND alive_until > clock_timestamp()
      AND (NOT $11::boolean OR NOT EXISTS (SELECT 1 FROM me) OR ticket < (SELECT ticket FROM me))
), pick AS (
    SELECT s AS slot FROM generate_series(0, $5::integer - 1) AS s
    WHERE NOT EXISTS (SELECT 1 FROM other_limit)
      AND (s IN (SELECT slot FROM mine)
           OR (NOT EXISTS (SELECT 1 FROM mine) AND s NOT IN (SELECT slot FROM live)
               AND (SELECT count(*) FROM ahead) < $5::integer - (SELECT count(*) FROM live)))
    ORDER BY s
    LIMIT 1
), tok AS (
    INSERT INTO distlock_key_token AS t (prefix, lock_key, token)
    SELECT $1, $2, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint FROM pick
    ON CONFLICT (prefix, lock_key) DO UPDATE SET token = GREATEST(t.token + 1, EXCLUDED.token)
    RETURNING t.token
), granted AS (
    INSERT INTO distlock_lease AS l
        (prefix, lock_key, slot, lock_limit, owner, token, acquired_at, expires_at, ttl_ms,
         hold, host, pid, username, command, note)
    SELECT $1, $2, pick.slot, $5::integer, $3, (SELECT token FROM tok), clock_timestamp(),
           clock_timestamp() + $4::bigint * interval '1 millisecond', $4::bigint, '', $6, $7::integer, $8, $9, $10
    FROM pick
    ON CONFLICT (prefix, lock_key, slot) DO UPDATE
    SET lock_limit = EXCLUDED.lock_limit, owner = EXCLUDED.owner, token = EXCLUDED.token,
        acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at,
        ttl_ms = EXCLUDED.ttl_ms, hold = '', host = EXCLUDED.host, pid = EXCLUDED.pid,
        username = EXCLUDED.username, command = EXCLUDED.command, note = EXCLUDED.note
    WHERE l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner
    RETURNING l.slot, l.token
), placed AS (
    INSERT INTO distlock_waiter AS w (prefix, lock_key, owner, ticket, alive_until, host, pid)
    SELECT $1, $2, $3, nextval('distlock_token'), clock_timestamp() + $12::bigint * interval '1 millisecond', $6, $7::integer
    WHERE $11::boolean AND NOT EXISTS (SELECT 1 FROM granted)
    ON CONFLICT (prefix, lock_key, owner) DO UPDATE SET alive_until = EXCLUDED.alive_until
    RETURNING w.ticket
), unplaced AS (
    -- (a data-modifying WITH runs whether or not it is read)
    -- our place once granted, and every place that was not refreshed in time
    DELETE FROM distlock_waiter
    WHERE prefix = $1 AND lock_key = $2
      AND ((owner = $3 AND EXISTS (SELECT 1 FROM granted))
           OR (owner <> $3 AND alive_until <= clock_timestamp()))
    RETURNING 1
), oldest AS (
    SELECT * FROM live ORDER BY token LIMIT 1
), next_waiter AS (
    SELECT host, pid FROM ahead ORDER BY ticket LIMIT 1
)
SELECT g.slot, g.token, (SELECT lock_limit FROM other_limit),
       h.owner, h.token, h.host, h.pid, h.username, h.command, h.note,
       (extract(epoch FROM h.acquired_at) * 1000000)::bigint, h.ttl_ms, h.hold,
       (extract(epoch FROM h.expires_at - clock_timestamp()) * 1000)::bigint,
       (SELECT (extract(epoch FROM min(expires_at) - clock_timestamp()) * 1000)::bigint FROM live),
       n.host, n.pid
FROM (SELECT 1) AS one
LEFT JOIN granted AS g ON true
LEFT JOIN oldest AS h ON true
LEFT JOIN next_waiter AS n ON true
