package mysql

// The statements other than acquire.sql and schema.sql: short, one each.
// "now" is the database's clock in µs since 1970 (the session's time zone
// is UTC, so there is no daylight-saving ambiguity).
const nowUS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"

// holderCols are the columns a Holder is made of, in holderCols order.
const holderCols = "owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - " + nowUS + ") DIV 1000"

const (
	// leaveLineSQL gives a waiter's place in the key's line back. Args:
	// prefix, key, owner.
	leaveLineSQL = "DELETE FROM distlock_waiter WHERE prefix = ? AND lock_key = ? AND owner = ?"

	// renewSQL extends our live lease to a full TTL from now. Args: ttl_ms,
	// prefix, key, slot, owner. One row matched: renewed.
	renewSQL = "UPDATE distlock_lease SET expires_us = " + nowUS + " + ? * 1000" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS

	// holdSQL keeps our live lease for ms from now with no renewals, marked
	// with why. Args: ms, ms, mode, prefix, key, slot, owner.
	holdSQL = "UPDATE distlock_lease SET expires_us = " + nowUS + " + ? * 1000, ttl_ms = ?, hold = ?" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS

	// releaseSQL deletes our live row. Args: prefix, key, slot, owner. One
	// row: released. (An expired row of ours is left to the next acquirer.)
	releaseSQL = "DELETE FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS

	// resumeSQL finds the live lease of a handle. Args: prefix, key, owner,
	// token. Columns: slot, lock_limit, ttl_ms.
	resumeSQL = "SELECT slot, lock_limit, ttl_ms FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND owner = ? AND token = ? AND expires_us > " + nowUS

	// inspectSQL is the oldest live lease of a key, then its limit and
	// slot. Args: prefix, key.
	inspectSQL = "SELECT lock_key, " + holderCols + ", lock_limit, slot FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND expires_us > " + nowUS + " ORDER BY token LIMIT 1"

	// listSQL is every live lease of a prefix whose key starts with a
	// LIKE pattern, by key then token, each with its limit and slot.
	// Args: prefix, pattern.
	listSQL = "SELECT lock_key, " + holderCols + ", lock_limit, slot FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key LIKE ? ESCAPE '!' AND expires_us > " + nowUS + " ORDER BY lock_key, token"

	// slotsSQL is every live lease of a key, by slot, each with its limit
	// and slot. Args: prefix, key.
	slotsSQL = "SELECT lock_key, " + holderCols + ", lock_limit, slot FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND expires_us > " + nowUS + " ORDER BY slot"

	// breakSQL deletes the live lease with a token (token 0: every lease
	// of the key), in one round trip and one transaction, and gives the
	// leases it deleted, oldest first. Args: prefix, key, token.
	breakSQL = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;" +
		" START TRANSACTION;" +
		" SET @dl_prefix = ?, @dl_key = ?, @dl_token = ?;" +
		" SELECT lock_key, " + holderCols + " FROM distlock_lease" +
		" WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us > " + nowUS +
		" AND (@dl_token = 0 OR token = @dl_token) ORDER BY token FOR UPDATE;" +
		" DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key" +
		" AND (@dl_token = 0 OR (token = @dl_token AND expires_us > " + nowUS + "));" +
		" COMMIT"
)
