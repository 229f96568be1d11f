-- Create entry $3 of key $2's run ledger, or replace it whole.
-- $1 prefix, $2 key, $3 id, $4 data.
INSERT INTO distlock_ledger (prefix, lock_key, id, data)
VALUES ($1, $2, $3, $4)
ON CONFLICT (prefix, lock_key, id) DO UPDATE SET data = EXCLUDED.data
