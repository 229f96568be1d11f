package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// TestDurabilityVerdict: a setting with which a crash forgets the last
// grants is a problem, one with which a failover to a synchronous standby
// may a warning; each line names the setting and its fix.
func TestDurabilityVerdict(t *testing.T) {
	for _, tc := range []struct {
		sc, fsync, standbys string
		want                lock.CheckStatus
		says, fix           string
	}{
		{"on", "on", "", lock.CheckOK, "synchronous_commit on, fsync on: a grant is on disk", ""},
		{"remote_apply", "on", "", lock.CheckOK, "a crash of the server keeps every lock", ""},
		{"local", "on", "", lock.CheckOK, "no synchronous standby", ""}, // local is on without standbys
		{"remote_write", "on", "", lock.CheckOK, "synchronous_commit remote_write, fsync on", ""},
		{"on", "on", "ANY 1 (s1, s2)", lock.CheckOK, `synchronous standbys (synchronous_standby_names "ANY 1 (s1, s2)")`, ""},
		{"remote_apply", "on", "s1", lock.CheckOK, "a failover to a synchronous standby keeps every lock", ""},
		{"off", "on", "", lock.CheckProblem, "synchronous_commit off (in distlock's sessions): a commit returns before it is on disk", "synchronous_commit = on"},
		{"off", "off", "s1", lock.CheckProblem, "granted twice", "synchronous_commit = on"},
		{"on", "off", "", lock.CheckProblem, "fsync off: PostgreSQL never forces its writes to disk", "fsync = on"},
		{"local", "on", "s1", lock.CheckWarning, "synchronous_commit local with synchronous standbys", "synchronous_commit = on"},
		{"remote_write", "on", "FIRST 1 (s1)", lock.CheckWarning, "if the standby's machine crashed too", "synchronous_commit = on"},
		{"sometimes", "on", "", lock.CheckWarning, `synchronous_commit "sometimes": a value distlock does not know`, "synchronous_commit = on"},
	} {
		c := durabilityVerdict(map[string]string{"synchronous_commit": tc.sc, "fsync": tc.fsync, "synchronous_standby_names": tc.standbys})
		if c.Name != "durability" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || !strings.Contains(c.Fix, tc.fix) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("durabilityVerdict(%q, %q, %q) = %+v, want %s saying %q, fix %q", tc.sc, tc.fsync, tc.standbys, c, tc.want, tc.says, tc.fix)
		}
	}
}

// durabilityOf is the durability check of doctor on the server at addr,
// as user.
func durabilityOf(t *testing.T, addr, user string) lock.Check {
	t.Helper()
	cfg, err := ParseURL("postgres://" + user + "@" + addr + "/postgres?sslmode=disable")
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

// TestDoctorDurability: on a real server, doctor reads the settings as
// distlock's sessions have them. Started with synchronous_commit=off (a
// crash then forgets held leases), or fsync=off, it names a problem; the
// harness's server (synchronous_commit on, fsync on) passes, for a user
// without privileges too, until a role setting turns synchronous_commit
// off for distlock's sessions.
func TestDoctorDurability(t *testing.T) {
	for _, tc := range []struct {
		setting, says string
	}{
		{"synchronous_commit=off", "synchronous_commit off"},
		{"fsync=off", "fsync off"},
	} {
		p, err := server.StartPostgresWith(t.TempDir(), tc.setting)
		p = mustStart(t, p, err)
		if c := durabilityOf(t, p.Addr(), server.PostgresUser); c.Status != lock.CheckProblem || !strings.Contains(c.Detail, tc.says) {
			t.Errorf("server with %s: %+v, want a problem saying %q", tc.setting, c, tc.says)
		}
		p.Close()
	}

	p := startServer(t)
	if c := durabilityOf(t, p.Addr(), server.PostgresUser); c.Status != lock.CheckOK || !strings.Contains(c.Detail, "synchronous_commit on, fsync on") {
		t.Errorf("the harness's server: %+v, want ok", c)
	}
	admin, err := pgx.Connect(ctx(t), serverURL(p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx(t))
	if _, err := admin.Exec(ctx(t), "CREATE ROLE plain LOGIN"); err != nil {
		t.Fatal(err)
	}
	if c := durabilityOf(t, p.Addr(), "plain"); c.Status != lock.CheckOK {
		t.Errorf("a user without privileges: %+v, want ok", c)
	}
	if _, err := admin.Exec(ctx(t), "ALTER ROLE plain SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	if c := durabilityOf(t, p.Addr(), "plain"); c.Status != lock.CheckProblem || !strings.Contains(c.Detail, "synchronous_commit off (in distlock's sessions)") {
		t.Errorf("a role with synchronous_commit off: %+v, want a problem", c)
	}
}
