package postgres

import (
	"fmt"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// durabilityReads is what durability.sql reads, for the doctor's line
// when it cannot.
const durabilityReads = "synchronous_commit, fsync and synchronous_standby_names"

// durabilityVerdict implements sqlstore.Dialect.Durability: whether a
// grant PostgreSQL has committed (distlock told the holder it holds the
// lock) is still there after a crash of the server, of its machine, or a
// failover to a synchronous standby. A grant that is not was never
// released: the lock can be granted again while its first holder runs.
// Tokens keep rising (a lease's is at least the server's clock in µs).
func durabilityVerdict(m map[string]string) lock.Check {
	sc, fsync := m["synchronous_commit"], m["fsync"]
	standbys := strings.TrimSpace(m["synchronous_standby_names"])
	const twice = ": the lock can then be granted twice, while its first holder still runs"
	scFix := "set synchronous_commit = on for distlock's sessions (in postgresql.conf, or with ALTER ROLE/ALTER DATABASE ... SET, wherever it was changed), then reload (SELECT pg_reload_conf())"
	fsyncFix := "set fsync = on in postgresql.conf and reload (SELECT pg_reload_conf()): PostgreSQL's documentation warns it can lose or corrupt data otherwise"
	waits := fmt.Sprintf("with synchronous standbys (synchronous_standby_names %q)", standbys)
	return lock.FirstCase("durability", []lock.Case{
		{When: sc == "off", Status: lock.CheckProblem, Fix: scFix,
			Detail: "synchronous_commit off (in distlock's sessions): a commit returns before it is on disk, so a crash of the server (of PostgreSQL alone, too) forgets the grants of its last moments (up to 3 × wal_writer_delay, 600ms by default)" + twice},
		{When: fsync == "off", Status: lock.CheckProblem, Fix: fsyncFix,
			Detail: "fsync off: PostgreSQL never forces its writes to disk, so a crash of the machine (the OS, a power cut) can lose the last grants, or corrupt the database" + twice},
		{When: standbys != "" && sc == "local", Status: lock.CheckWarning, Fix: scFix,
			Detail: "synchronous_commit local " + waits + ": a commit waits for this server's disk, not for a standby, so a failover to one can lose the last grants" + twice},
		{When: standbys != "" && sc == "remote_write", Status: lock.CheckWarning, Fix: scFix,
			Detail: "synchronous_commit remote_write " + waits + ": a commit waits until a standby has handed it to its OS, not until it is on the standby's disk, so a failover loses the last grants if the standby's machine crashed too" + twice},
		{When: sc != "on" && sc != "remote_apply" && sc != "local" && sc != "remote_write", Status: lock.CheckWarning, Fix: scFix,
			Detail: fmt.Sprintf("synchronous_commit %q: a value distlock does not know, so it cannot say whether a crash keeps the last grants", sc)},
		{When: standbys != "", Detail: fmt.Sprintf("synchronous_commit %s, fsync on, %s: a grant is on this server's disk and on a standby's before distlock is told, so a crash or a failover to a synchronous standby keeps every lock", sc, waits)},
	}, lock.Case{Detail: fmt.Sprintf("synchronous_commit %s, fsync on: a grant is on disk before distlock is told, so a crash of the server keeps every lock (no synchronous standby: a failover to an asynchronous one could lose the last grants)", sc)})
}
