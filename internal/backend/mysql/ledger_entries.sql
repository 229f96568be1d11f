-- Every entry of a key's run ledger. Arguments: prefix, key.
SELECT id, data FROM distlock_ledger WHERE prefix = ? AND lock_key = ?
