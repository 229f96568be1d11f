package server

import "strconv"

// ServerDefault as a connection limit leaves the setting out, so that the
// server runs with its own default: ZooKeeper's maxClientCnxns 60 (per
// client IP), PostgreSQL's max_connections from initdb (100 on most
// machines), MariaDB's max_connections 151. The Start functions without a
// limit give the tests' generous settings instead (ZooKeeper unlimited,
// PostgreSQL 200, MariaDB 300).
const ServerDefault = -1

// StartZooKeeperMaxClientCnxns is StartZooKeeper with maxClientCnxns n
// (the most connections the server accepts from one client IP; 0 is no
// limit), or the server's default when n is ServerDefault.
func StartZooKeeperMaxClientCnxns(dir string, n int) (*Process, error) {
	return startZooKeeper(dir, true, zkCnxnsLine(n))
}

// StartPostgresMaxConnections is StartPostgres with max_connections n,
// or the server's default when n is ServerDefault.
func StartPostgresMaxConnections(dir string, n int) (*Process, error) {
	return startPostgres(dir, limitArgs(n, "-c", "max_connections="))
}

// StartMariaDBMaxConnections is StartMariaDB with max_connections n, or
// the server's default when n is ServerDefault.
func StartMariaDBMaxConnections(dir string, n int) (*Process, error) {
	return startMariaDB(dir, limitArgs(n, "--max-connections="))
}

// Pid is the process id of the server's main process (the leader of its
// process group), 0 when it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.pid
}

// zkCnxnsLine is zoo.cfg's maxClientCnxns line for n ("" for the default).
func zkCnxnsLine(n int) string {
	if n == ServerDefault {
		return ""
	}
	return "maxClientCnxns=" + strconv.Itoa(n)
}

// limitArgs is the command-line arguments setting a limit to n: the last
// one ends with "=" and gets n; none for ServerDefault.
func limitArgs(n int, args ...string) []string {
	if n == ServerDefault {
		return nil
	}
	out := append([]string(nil), args...)
	out[len(out)-1] += strconv.Itoa(n)
	return out
}
