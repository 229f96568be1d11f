-- Serializes the acquirers of one key for the rest of the implicit
-- transaction of their batch (sent just before acquire.sql), so that a
-- mutex and a semaphore acquirer (or two semaphore acquirers) cannot both
-- judge the key by snapshots that miss each other's grant. Renewals,
-- releases and breaks do not take it: they only shorten or extend
-- existing leases. $1 prefix, $2 key.
SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))
