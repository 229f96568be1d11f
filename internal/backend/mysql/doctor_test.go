package mysql

import (
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// TestDurabilityVerdict: InnoDB settings with which a crash of mysqld
// forgets the last grants are a problem, with which a crash of the machine
// does a warning; sync_binlog counts only with the binary log on. Each line
// names the setting and its fix.
func TestDurabilityVerdict(t *testing.T) {
	for _, tc := range []struct {
		flush, logBin, sync string
		want                lock.CheckStatus
		says, fix           string
	}{
		{"1", "OFF", "0", lock.CheckOK, "innodb_flush_log_at_trx_commit 1, binary log off (so sync_binlog does not matter)", ""},
		{"1", "ON", "1", lock.CheckOK, "binary log on with sync_binlog 1: every grant is on disk", ""},
		{"3", "ON", "0", lock.CheckOK, "innodb_flush_log_at_trx_commit 3, binary log on with sync_binlog 0", ""},
		{"0", "OFF", "0", lock.CheckProblem, "innodb_flush_log_at_trx_commit 0: InnoDB writes its log about once a second", "innodb_flush_log_at_trx_commit = 1"},
		{"0", "ON", "1", lock.CheckProblem, "granted twice", "innodb_flush_log_at_trx_commit = 1"},
		{"2", "OFF", "0", lock.CheckWarning, "a crash of mysqld keeps every grant, but a crash of the machine", "innodb_flush_log_at_trx_commit = 1"},
		{"1", "ON", "0", lock.CheckWarning, "binary log on and sync_binlog 0: InnoDB leaves a commit's durability to the binary log", "sync_binlog = 1"},
		{"1", "ON", "100", lock.CheckWarning, "sync_binlog 100", "sync_binlog = 1"},
		{"", "OFF", "0", lock.CheckWarning, `innodb_flush_log_at_trx_commit "": a value distlock does not know`, "innodb_flush_log_at_trx_commit = 1"},
	} {
		c := durabilityVerdict(map[string]string{"innodb_flush_log_at_trx_commit": tc.flush, "log_bin": tc.logBin, "sync_binlog": tc.sync})
		if c.Name != "durability" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || !strings.Contains(c.Fix, tc.fix) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("durabilityVerdict(%q, %q, %q) = %+v, want %s saying %q, fix %q", tc.flush, tc.logBin, tc.sync, c, tc.want, tc.says, tc.fix)
		}
	}
}

// durabilityOf is the durability check of doctor on the server at addr,
// as user.
func durabilityOf(t *testing.T, addr, user string) lock.Check {
	t.Helper()
	cfg, err := ParseURL("mysql://" + user + "@" + addr + "/" + server.MariaDBDatabase)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range b.Doctor(ctx(t), lock.DoctorRequest{TTL: 3 * time.Second, Timeout: 5 * time.Second}) {
		if c.Name == "durability" {
			return c
		}
	}
	t.Fatalf("doctor on %s has no durability check", addr)
	return lock.Check{}
}

// startWith starts a MariaDB with more options and opens a root
// connection to it.
func startWith(t *testing.T, options ...string) (*server.Process, *sql.DB) {
	t.Helper()
	p, err := server.StartMariaDBWith(t.TempDir(), options...)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skipf("%v: the MySQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := mysqldrv.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = server.MariaDBUser, "tcp", p.Addr(), server.MariaDBDatabase
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return p, db
}

// TestDoctorDurability: on a real server, doctor reads the settings, as a
// user with no global privilege too. Started with
// --innodb-flush-log-at-trx-commit=0 it names a problem; set to 1 it
// passes, to 2 it warns; with the binary log on, sync_binlog 0 warns and 1
// passes.
func TestDoctorDurability(t *testing.T) {
	p, db := startWith(t, "--innodb-flush-log-at-trx-commit=0")
	for _, q := range []string{"CREATE USER plain@'%'", "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON distlock.* TO plain@'%'"} {
		if _, err := db.ExecContext(ctx(t), q); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		set  string
		want lock.CheckStatus
		says string
	}{
		{"", lock.CheckProblem, "innodb_flush_log_at_trx_commit 0"},
		{"SET GLOBAL innodb_flush_log_at_trx_commit = 1", lock.CheckOK, "innodb_flush_log_at_trx_commit 1, binary log off"},
		{"SET GLOBAL innodb_flush_log_at_trx_commit = 2", lock.CheckWarning, "innodb_flush_log_at_trx_commit 2"},
	} {
		if step.set != "" {
			if _, err := db.ExecContext(ctx(t), step.set); err != nil {
				t.Fatal(err)
			}
		}
		if c := durabilityOf(t, p.Addr(), "plain"); c.Status != step.want || !strings.Contains(c.Detail, step.says) {
			t.Errorf("after %q: %+v, want %s saying %q", step.set, c, step.want, step.says)
		}
	}

	p, db = startWith(t, "--innodb-flush-log-at-trx-commit=1", "--log-bin", "--sync-binlog=0")
	if c := durabilityOf(t, p.Addr(), server.MariaDBUser); c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "binary log on and sync_binlog 0") {
		t.Errorf("log-bin, sync-binlog 0: %+v, want a warning", c)
	}
	if _, err := db.ExecContext(ctx(t), "SET GLOBAL sync_binlog = 1"); err != nil {
		t.Fatal(err)
	}
	if c := durabilityOf(t, p.Addr(), server.MariaDBUser); c.Status != lock.CheckOK || !strings.Contains(c.Detail, "binary log on with sync_binlog 1") {
		t.Errorf("log-bin, sync-binlog 1: %+v, want ok", c)
	}
}
