-- distlock's MySQL/MariaDB schema, created on first use when missing (in
-- the URL's database). A DBA who would rather not give distlock's user
-- CREATE can run this once; distlock's user then needs SELECT, INSERT,
-- UPDATE, DELETE on its four tables. Every statement creates only what is
-- missing: running it again on an older deployment adds what it lacks
-- (distlock_ledger).

-- Fencing tokens: one counter row, updated in every acquiring transaction
-- (which also serializes them) to max(value + 1, the database's clock in
-- µs), so tokens rise across every key, even when lease rows are deleted
-- or the tables are created again.
CREATE TABLE IF NOT EXISTS distlock_token (
    id    TINYINT UNSIGNED NOT NULL PRIMARY KEY,
    value BIGINT UNSIGNED  NOT NULL
) ENGINE=InnoDB;
INSERT IGNORE INTO distlock_token (id, value) VALUES (1, 0);

-- One row per held lease: a mutex is slot 0 with lock_limit 1, a semaphore
-- (--limit N) has a row per held slot 0..N-1. Times are µs since 1970 by
-- the database's clock; a row whose expires_us has passed is free. Prefix,
-- key and owner are bytes (VARBINARY), compared byte for byte: "Job",
-- "job" and "job " are three locks (a text collation would make at least
-- two of them one, on MySQL and MariaDB alike).
CREATE TABLE IF NOT EXISTS distlock_lease (
    prefix      VARBINARY(255) NOT NULL,  -- --prefix (namespace)
    lock_key    VARBINARY(512) NOT NULL,  -- --key
    slot        INT          NOT NULL,
    lock_limit  INT          NOT NULL,    -- 1 for a mutex
    owner       VARBINARY(128) NOT NULL,  -- secret owner id of the holder
    token       BIGINT UNSIGNED NOT NULL, -- fencing token
    acquired_us BIGINT       NOT NULL,
    expires_us  BIGINT       NOT NULL,
    ttl_ms      BIGINT       NOT NULL,
    hold        VARCHAR(32)  NOT NULL,    -- min-hold, handle: nobody renews it
    host        VARCHAR(255) NOT NULL,
    pid         INT          NOT NULL,
    username    VARCHAR(255) NOT NULL,
    command     TEXT         NOT NULL,    -- argv[0] only
    note        TEXT         NOT NULL,
    PRIMARY KEY (prefix, lock_key, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Fair waiting: one place per waiter in a key's line, in arrival order
-- (ticket: the counter's value of the attempt that took the place). A
-- waiter refreshes alive_us while it waits; a place not refreshed in time
-- is pruned, so a dead waiter cannot block the line.
CREATE TABLE IF NOT EXISTS distlock_waiter (
    prefix      VARBINARY(255)  NOT NULL,
    lock_key    VARBINARY(512)  NOT NULL,
    owner       VARBINARY(128)  NOT NULL, -- secret owner id of the waiter
    ticket      BIGINT UNSIGNED NOT NULL, -- arrival order
    alive_us    BIGINT          NOT NULL, -- µs since 1970, by the database's clock
    host        VARCHAR(255)    NOT NULL,
    pid         INT             NOT NULL, -- with host: names the waiter to those it keeps behind it
    PRIMARY KEY (prefix, lock_key, owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The run ledger (--once-per, --slot, distlock history): each key's
-- entries, id → bytes (at most 4096), kept apart from the leases, so a
-- release, an expiry or a break leaves them.
CREATE TABLE IF NOT EXISTS distlock_ledger (
    prefix   VARBINARY(255)  NOT NULL,
    lock_key VARBINARY(512)  NOT NULL,
    id       VARBINARY(64)   NOT NULL,
    data     VARBINARY(4096) NOT NULL,
    PRIMARY KEY (prefix, lock_key, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
