-- Every entry of key $2's run ledger. $1 prefix, $2 key.
SELECT id, data FROM distlock_ledger WHERE prefix = $1 AND lock_key = $2
