package mysql

import "github.com/distlock/distlock/internal/backend/sqlstore"

// "now" is the database's clock in µs since 1970 (the session's time zone
// is UTC, so there is no daylight-saving ambiguity).
const nowUS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"

// holderCols are the columns a Holder is made of (sqlstore.Queries).
const holderCols = "owner, token, host, pid, username, command, note, acquired_us, ttl_ms, hold, (expires_us - " + nowUS + ") DIV 1000"

// queries are MySQL's statements: acquire.sql and the run ledger's
// (ledger_*.sql), and the others, short, one each here, with the
// arguments sqlstore.Queries gives them.
var queries = sqlstore.Queries{
	Acquire: acquireSQL,

	// Our live lease extended to a full TTL from now.
	Renew: "UPDATE distlock_lease SET expires_us = " + nowUS + " + ? * 1000" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS,

	// Our live lease kept for ms from now with no renewals, marked with why.
	Hold: "UPDATE distlock_lease SET expires_us = " + nowUS + " + ? * 1000, ttl_ms = ?, hold = ?" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS,

	// Our live row deleted. (An expired row of ours is left to the next
	// acquirer.)
	Release: "DELETE FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND slot = ? AND owner = ? AND expires_us > " + nowUS,

	// The live lease of a handle: slot, lock_limit, ttl_ms.
	Resume: "SELECT slot, lock_limit, ttl_ms FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND owner = ? AND token = ? AND expires_us > " + nowUS,

	// Every live lease of a key, oldest (lowest token) first.
	Leases: "SELECT lock_key, " + holderCols + ", lock_limit, slot FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key = ? AND expires_us > " + nowUS + " ORDER BY token",

	// Every live lease of a prefix whose key matches a LIKE pattern
	// (likePrefix), by key then token.
	List: "SELECT lock_key, " + holderCols + ", lock_limit, slot FROM distlock_lease" +
		" WHERE prefix = ? AND lock_key LIKE ? ESCAPE '!' AND expires_us > " + nowUS + " ORDER BY lock_key, token",

	// The live lease with a token (token 0: every lease of the key)
	// deleted, in one round trip and one transaction; the leases deleted,
	// oldest first.
	Break: "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;" +
		" START TRANSACTION;" +
		" SET @dl_prefix = ?, @dl_key = ?, @dl_token = ?;" +
		" SELECT lock_key, " + holderCols + " FROM distlock_lease" +
		" WHERE prefix = @dl_prefix AND lock_key = @dl_key AND expires_us > " + nowUS +
		" AND (@dl_token = 0 OR token = @dl_token) ORDER BY token FOR UPDATE;" +
		" DELETE FROM distlock_lease WHERE prefix = @dl_prefix AND lock_key = @dl_key" +
		" AND (@dl_token = 0 OR (token = @dl_token AND expires_us > " + nowUS + "));" +
		" COMMIT",

	Leave:     "DELETE FROM distlock_waiter WHERE prefix = ? AND lock_key = ? AND owner = ?",
	QueueLen:  "SELECT COUNT(*) FROM distlock_waiter WHERE prefix = ? AND lock_key = ?",
	LeaseLeft: "SELECT expires_us - " + nowUS + " FROM distlock_lease WHERE prefix = ? AND lock_key = ? AND token = ?",

	PutEntry:      putEntrySQL,
	Entries:       entriesSQL,
	DeleteEntries: deleteEntriesSQL,
}
