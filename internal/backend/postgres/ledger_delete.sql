-- Delete the entries $3 (a text array) of key $2's run ledger; an id that
-- is not there is none. $1 prefix, $2 key, $3 ids.
DELETE FROM distlock_ledger WHERE prefix = $1 AND lock_key = $2 AND id = ANY($3::text[])
