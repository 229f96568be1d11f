-- Delete entries of a key's run ledger; an id that is not there is none.
-- Arguments: prefix, key, the ids joined by commas (an id never holds
-- one: lock.ValidEntryID).
DELETE FROM distlock_ledger WHERE prefix = ? AND lock_key = ? AND FIND_IN_SET(id, ?) > 0
