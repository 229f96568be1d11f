package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// PostgresUser is the superuser of a test PostgreSQL; it logs in with no
// password (trust authentication, loopback only). The database
// "postgres" exists.
const PostgresUser = "postgres"

// StartPostgres starts a PostgreSQL server on a free loopback port and
// waits until it accepts connections. Its log is dir/postgres.log (dir is
// created if needed). Its data directory, a copy of a template made once
// per machine with initdb (trust authentication, user "postgres", UTF8, C
// locale), and its Unix socket live in a private directory under /dev/shm
// (or $TMPDIR)/distlock-testenv-<uid> that Close removes;
// dir/postgres.data links to it. fsync is on, as distlock's doctor wants
// it (on /dev/shm it costs nothing); full_page_writes is off (less WAL):
// a killed server restarts with every committed row. PostgreSQL refuses to run as root: when the tests run as
// root, initdb and the server run as the "postgres" user (or nobody).
// Restart keeps the data. It returns an error wrapping ErrNoBinary when
// initdb or postgres cannot be found on PATH or in
// /usr/lib/postgresql/*/bin (where Debian installs them).
func StartPostgres(dir string) (*Process, error) {
	return startPostgres(dir, limitArgs(200, "-c", "max_connections="))
}

// startPostgres starts it with limit (its max_connections arguments; none:
// the server's default), and any more -c arguments after them.
func startPostgres(dir string, limit []string) (*Process, error) {
	initdb, postgres, err := lookPostgres()
	if err != nil {
		return nil, err
	}
	d, err := dataFromTemplate(dir, "postgres", "pg", "postgres", []string{initdb, postgres}, postgres,
		func(data string, acct account) error { return runInitdb(initdb, data, acct) })
	if err != nil {
		return nil, err
	}
	// The last kill leaves the postmaster's shared memory segment behind:
	// remove it before the data directory that names it.
	cleanup := func() error {
		removePostgresShm(d.data)
		return d.cleanup()
	}
	return startFresh(1, cleanup, func(ports []int) (spec, error) {
		port := ports[0]
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return spec{
			name: "postgres",
			bin:  postgres,
			dir:  d.priv,
			args: append([]string{
				"-D", d.data,
				"-p", strconv.Itoa(port),
				"-k", d.priv, // the Unix socket: short path, ours only
				"-c", "listen_addresses=127.0.0.1",
				"-c", "full_page_writes=off",
				"-c", "autovacuum=off",
				"-c", "jit=off",
				"-c", "shared_buffers=16MB",
				"-c", "logging_collector=off",
				"-c", "log_min_messages=warning",
			}, limit...),
			env:     postgresEnv(),
			logPath: filepath.Join(d.dir, "postgres.log"),
			addr:    addr,
			cred:    d.acct.cred,
			probe: func(_ context.Context, pid int) error {
				return postgresReady(d.data, pid, port)
			},
		}, nil
	})
}

// postgresLibDir is where Debian installs each PostgreSQL version's
// binaries (in <version>/bin). A variable for tests.
var postgresLibDir = "/usr/lib/postgresql"

// lookPostgres finds initdb and postgres: on PATH, else in the newest
// /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH).
func lookPostgres() (initdb, postgres string, err error) {
	i, err1 := exec.LookPath("initdb")
	p, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return i, p, nil
	}
	dirs, _ := filepath.Glob(filepath.Join(postgresLibDir, "*", "bin"))
	sort.Slice(dirs, func(a, b int) bool { return pgMajor(dirs[a]) > pgMajor(dirs[b]) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	return "", "", fmt.Errorf("%w: initdb and postgres (PATH, /usr/lib/postgresql/*/bin)", ErrNoBinary)
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// postgresEnv is the test's environment without PG* variables (PGDATA,
// PGPORT... would be read by the server and initdb), in the C locale.
func postgresEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}

// runInitdb creates the data directory data as acct.
func runInitdb(initdb, data string, acct account) error {
	cmd := exec.Command(initdb,
		"-D", data,
		"-U", PostgresUser,
		"-A", "trust",
		"-E", "UTF8",
		"--locale=C",
		"--no-sync",
		"--no-instructions",
		"--wal-segsize=1", // MB: a template of 24 MB, not 39
	)
	cmd.Dir = filepath.Dir(data)
	cmd.Env = postgresEnv()
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Credential = acct.cred
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb as %s: %w\n%s", acct.name, err, out)
	}
	return nil
}

// postgresReady reports nil once postmaster.pid says that process pid,
// listening on port, is ready to accept connections. The file is in our own
// data directory, so it names our server, not another on the port.
func postgresReady(data string, pid, port int) error {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return err
	}
	// pid, data dir, start time, port, socket dir, listen address, shared
	// memory key, status ("starting", "ready", "stopping").
	lines := strings.Split(string(b), "\n")
	if len(lines) < 8 {
		return fmt.Errorf("postmaster.pid is not complete yet")
	}
	if strings.TrimSpace(lines[0]) != strconv.Itoa(pid) {
		return fmt.Errorf("postmaster.pid names process %s, not %d", strings.TrimSpace(lines[0]), pid)
	}
	if strings.TrimSpace(lines[3]) != strconv.Itoa(port) {
		return fmt.Errorf("postmaster.pid names port %s, not %d", strings.TrimSpace(lines[3]), port)
	}
	if status := strings.TrimSpace(lines[7]); status != "ready" {
		return fmt.Errorf("postgres is %s", status)
	}
	return nil
}
