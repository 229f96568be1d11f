package mysql

import (
	"fmt"

	"github.com/distlock/distlock/internal/lock"
)

// durabilityReads is what durability.sql reads, for the doctor's line
// when it cannot.
const durabilityReads = "innodb_flush_log_at_trx_commit, log_bin and sync_binlog"

// durabilityVerdict implements sqlstore.Dialect.Durability: whether a
// grant InnoDB has committed (distlock told the holder it holds the lock)
// is still there after a crash of the server or of its machine. A grant
// that is not was never released: the lock can be granted again while its
// first holder runs.
//
// sync_binlog matters on a single server only when the binary log is on:
// InnoDB then leaves a commit's durability to the binary log (with
// innodb_flush_log_at_trx_commit 1 it flushes the transaction's prepare,
// not its commit), and recovery rolls back a prepared transaction the
// binary log lacks; with sync_binlog other than 1 an OS crash can lose
// the binary log's last events, and with them commits. Value 3 (MariaDB)
// flushes the commit too, whatever the binary log. With the binary log
// off, sync_binlog is not read by anything.
func durabilityVerdict(m map[string]string) lock.Check {
	flush, binlog, sync := m["innodb_flush_log_at_trx_commit"], m["log_bin"] == "ON", m["sync_binlog"]
	const twice = ": the lock can then be granted twice, while its first holder still runs"
	fix := "SET GLOBAL innodb_flush_log_at_trx_commit = 1, and set it in the server's config file"
	return lock.FirstCase("durability", []lock.Case{
		{When: flush == "0", Status: lock.CheckProblem, Fix: fix,
			Detail: "innodb_flush_log_at_trx_commit 0: InnoDB writes its log about once a second, not at each commit, so a crash of the server (of mysqld alone, too) forgets up to a second of grants" + twice},
		{When: flush == "2", Status: lock.CheckWarning, Fix: fix,
			Detail: "innodb_flush_log_at_trx_commit 2: InnoDB hands its log to the OS at each commit but flushes it to disk about once a second, so a crash of mysqld keeps every grant, but a crash of the machine (the OS, a power cut) forgets up to a second of them" + twice},
		{When: flush != "1" && flush != "3", Status: lock.CheckWarning, Fix: fix,
			Detail: fmt.Sprintf("innodb_flush_log_at_trx_commit %q: a value distlock does not know, so it cannot say whether a crash keeps the last grants", flush)},
		{When: flush == "1" && binlog && sync != "1", Status: lock.CheckWarning,
			Fix:    "SET GLOBAL sync_binlog = 1, and set it in the server's config file (on MariaDB, innodb_flush_log_at_trx_commit = 3 also does)",
			Detail: fmt.Sprintf("innodb_flush_log_at_trx_commit 1 with the binary log on and sync_binlog %s: InnoDB leaves a commit's durability to the binary log, which is not flushed at each commit, so a crash of the machine (the OS, a power cut) can roll back the last grants", sync) + twice},
	}, lock.Case{Detail: fmt.Sprintf("innodb_flush_log_at_trx_commit %s%s: every grant is on disk before distlock is told, so a crash of the server or of its machine keeps every lock", flush, binlogNote(binlog, sync))})
}

// binlogNote is what the ok verdict says of the binary log.
func binlogNote(on bool, sync string) string {
	if on {
		return ", binary log on with sync_binlog " + sync
	}
	return ", binary log off (so sync_binlog does not matter)"
}
