-- Delete the entries $3 (ids joined by commas: an id never holds one,
-- lock.ValidEntryID) of key $2's run ledger; an id that is not there is
-- none. $1 prefix, $2 key, $3 ids.
DELETE FROM distlock_ledger WHERE prefix = $1 AND lock_key = $2 AND id = ANY(string_to_array($3, ','))
