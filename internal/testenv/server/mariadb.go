package server

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBUser is the superuser of a test MariaDB; it logs in over TCP with
// no password. The database "distlock" exists.
const (
	MariaDBUser     = "root"
	MariaDBDatabase = "distlock"
)

// StartMariaDB starts a MariaDB server (mariadbd, or mysqld) on a free
// loopback port and waits until it answers a query. Its log is
// dir/mariadb.log (dir is created if needed). Its data directory, a copy of
// a template made once per machine with mariadb-install-db (root with no
// password, and the database "distlock"), its Unix socket and pid file live
// in a private directory under /dev/shm (or $TMPDIR)/distlock-testenv-<uid>
// that Close removes; dir/mariadb.data links to it. InnoDB writes its log
// at each commit but does not fsync it: a killed server restarts with every
// committed row, only an OS crash could lose some. When the tests run as
// root the server runs as the "mysql" user (or nobody). Restart keeps the
// data. It returns an error wrapping ErrNoBinary when mariadbd (or mysqld)
// or mariadb-install-db (or mysql_install_db) cannot be found on PATH,
// /usr/sbin or /usr/bin.
func StartMariaDB(dir string) (*Process, error) {
	return startMariaDB(dir, limitArgs(300, "--max-connections="))
}

// startMariaDB starts it with limit (its max-connections argument; none:
// the server's default).
func startMariaDB(dir string, limit []string) (*Process, error) {
	server, err := lookSbin("mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	install, err := lookSbin("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	d, err := dataFromTemplate(dir, "mariadb", "my", "mysql", []string{server, install}, server,
		func(data string, acct account) error { return installMariaDB(server, install, data, acct) })
	if err != nil {
		return nil, err
	}
	pidFile := filepath.Join(d.priv, "mariadbd.pid")
	tmp, err := privateTmp(d.priv, d.acct)
	if err != nil {
		_ = d.cleanup()
		return nil, err
	}

	return startFresh(1, d.cleanup, func(ports []int) (spec, error) {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		return spec{
			name: "mariadb",
			bin:  server,
			dir:  d.priv,
			args: append([]string{
				"--no-defaults",
				"--datadir=" + d.data,
				"--socket=" + filepath.Join(d.priv, "mariadbd.sock"),
				"--pid-file=" + pidFile,
				"--tmpdir=" + tmp,
				"--port=" + strconv.Itoa(ports[0]),
				"--bind-address=127.0.0.1",
				"--skip-name-resolve",
				"--performance-schema=OFF",
				"--innodb-flush-log-at-trx-commit=2",
				"--innodb-doublewrite=0",
			}, append(limit, mariadbSmall...)...),
			env:     mariadbEnv(),
			logPath: filepath.Join(d.dir, "mariadb.log"),
			addr:    addr,
			cred:    d.acct.cred,
			probe: func(ctx context.Context, _ int) error {
				return mariadbAnswers(ctx, addr, pidFile)
			},
		}, nil
	})
}

// privateTmp makes dir/tmp for one server's temporary files. mariadbd
// deletes every "#sql*" file in its tmpdir when it starts: with the
// default /tmp, each server a test started (or restarted) removed the
// internal temporary tables of every other running one, whose next query
// then failed ("Error on delete of '/tmp/#sql-temptable-...'", or the
// driver's "invalid connection").
func privateTmp(dir string, acct account) (string, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	return tmp, acct.chown(tmp)
}

// mariadbSmall keeps a test server small and quick to start; the template
// is made with the same InnoDB sizes.
var mariadbSmall = []string{
	"--innodb-buffer-pool-size=16M",
	"--innodb-log-file-size=4M",
}

// sbinDirs are looked in after PATH for the MariaDB binaries. A variable
// for tests.
var sbinDirs = []string{"/usr/sbin", "/usr/bin"}

// lookSbin resolves the first of names on PATH, or in /usr/sbin or
// /usr/bin (PATH may lack sbin for non-root users).
func lookSbin(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, d := range sbinDirs {
			if p := filepath.Join(d, n); isExecutable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNoBinary, strings.Join(names, " or "))
}

// mariadbEnv is the test's environment without MYSQL_* variables (the
// server reads MYSQL_TCP_PORT, MYSQL_UNIX_PORT...).
func mariadbEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MYSQL") && !strings.HasPrefix(kv, "MARIADB") {
			env = append(env, kv)
		}
	}
	return env
}

// mariadbBootstrap is run once on a fresh template: the database the tests
// use. (With --auth-root-authentication-method=normal the installer makes
// root@localhost, root@127.0.0.1 and root@::1 with no password.)
const mariadbBootstrap = "CREATE DATABASE IF NOT EXISTS distlock;\n"

// installMariaDB creates the data directory data as acct: the system
// tables, then mariadbBootstrap.
func installMariaDB(server, install, data string, acct account) error {
	run := func(stdin string, bin string, args ...string) error {
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Dir(data)
		cmd.Env = mariadbEnv()
		cmd.Stdin = strings.NewReader(stdin)
		cmd.SysProcAttr = sysProcAttr()
		cmd.SysProcAttr.Credential = acct.cred
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s as %s: %w\n%s", filepath.Base(bin), acct.name, err, out)
		}
		return nil
	}
	tmp, err := privateTmp(filepath.Dir(data), acct)
	if err != nil {
		return err
	}
	args := append([]string{
		"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
	}, mariadbSmall...)
	if err := run("", install, args...); err != nil {
		return err
	}
	return run(mariadbBootstrap, server, append([]string{
		"--no-defaults", "--bootstrap", "--datadir=" + data, "--tmpdir=" + tmp, "--log-warnings=0",
	}, mariadbSmall...)...)
}

// mariadbAnswers reports nil once the server on addr answers a query as
// root and says its pid file is pidFile: a file in our own private
// directory, so the server is ours, not another on the port.
func mariadbAnswers(ctx context.Context, addr, pidFile string) error {
	cfg := mysql.NewConfig()
	cfg.User = MariaDBUser
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.Logger = quietMySQL{} // a refused probe is not news
	if dl, ok := ctx.Deadline(); ok {
		cfg.Timeout = max(time.Millisecond, time.Until(dl))
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var got string
	if err := db.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&got); err != nil {
		return err
	}
	if got != pidFile {
		return fmt.Errorf("the server on %s has pid file %s, not ours (%s)", addr, got, pidFile)
	}
	return nil
}

type quietMySQL struct{}

func (quietMySQL) Print(...any) {}
