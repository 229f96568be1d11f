-- distlock's PostgreSQL schema, created on first use when missing (in the
-- first schema of the connection's search_path). A DBA who would rather
-- not give distlock's user CREATE can run this once; distlock's user then
-- needs SELECT, INSERT, UPDATE, DELETE on distlock_lease, distlock_waiter,
-- distlock_key_token and distlock_ledger, and USAGE on the sequence
-- distlock_token. Every statement creates only what is missing: running
-- it again on an older deployment adds what it lacks (distlock_ledger).
-- distlock sends it as one script, one implicit transaction, serialized
-- among concurrent creators by the advisory lock below (two CREATE ... IF
-- NOT EXISTS at once can otherwise collide in the catalog).

SELECT pg_advisory_xact_lock(hashtextextended('distlock schema', 0));

-- Fencing tokens: the last token of each key. The statement that grants
-- sets it to max(last + 1, the database's clock in microseconds since
-- 1970) and hands that out (the rule of every engine: lock.NextToken), so
-- tokens rise across releases (rows deleted), and still rise after a
-- point-in-time restore, a failover to a lagging replica or the schema
-- dropped and created again, as long as the database's clock is sane.
CREATE TABLE IF NOT EXISTS distlock_key_token (
    prefix   text   NOT NULL,
    lock_key text   NOT NULL,
    token    bigint NOT NULL,
    PRIMARY KEY (prefix, lock_key)
);

-- The waiters' tickets (arrival order). A new sequence starts at the
-- database's clock in microseconds.
CREATE SEQUENCE IF NOT EXISTS distlock_token AS bigint;
SELECT setval('distlock_token', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
FROM distlock_token WHERE NOT is_called;

-- One row per held lease: a mutex is slot 0 with lock_limit 1, a semaphore
-- (--limit N) has a row per held slot 0..N-1. A row whose expires_at has
-- passed (by the database's clock) is free: the next acquirer takes it over.
CREATE TABLE IF NOT EXISTS distlock_lease (
    prefix      text        NOT NULL,            -- --prefix (namespace)
    lock_key    text        NOT NULL,            -- --key
    slot        integer     NOT NULL,
    lock_limit  integer     NOT NULL,            -- 1 for a mutex
    owner       text        NOT NULL,            -- secret owner id of the holder
    token       bigint      NOT NULL,            -- fencing token
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ttl_ms      bigint      NOT NULL,
    hold        text        NOT NULL DEFAULT '', -- min-hold, handle: nobody renews it
    host        text        NOT NULL DEFAULT '',
    pid         integer     NOT NULL DEFAULT 0,
    username    text        NOT NULL DEFAULT '',
    command     text        NOT NULL DEFAULT '', -- argv[0] only
    note        text        NOT NULL DEFAULT '',
    PRIMARY KEY (prefix, lock_key, slot)
);

-- Fair waiting: one place per waiter in a key's line, in arrival order
-- (ticket, from distlock_token too). A waiter refreshes alive_until while
-- it waits; a place not refreshed in time is pruned, so a dead waiter
-- cannot block the line.
CREATE TABLE IF NOT EXISTS distlock_waiter (
    prefix      text        NOT NULL,
    lock_key    text        NOT NULL,
    owner       text        NOT NULL,            -- secret owner id of the waiter
    ticket      bigint      NOT NULL,            -- arrival order
    alive_until timestamptz NOT NULL,
    host        text        NOT NULL DEFAULT '',
    pid         integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (prefix, lock_key, owner)
);

-- The run ledger (--once-per, --slot, distlock history): each key's
-- entries, id → bytes (at most 4096), kept apart from the leases, so a
-- release, an expiry or a break leaves them.
CREATE TABLE IF NOT EXISTS distlock_ledger (
    prefix   text  NOT NULL,
    lock_key text  NOT NULL,
    id       text  NOT NULL,
    data     bytea NOT NULL,
    PRIMARY KEY (prefix, lock_key, id)
);
