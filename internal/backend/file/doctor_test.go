package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// TestDoctorHealthyDir: a temporary directory on this machine passes every
// check, and doctor leaves no file behind.
func TestDoctorHealthyDir(t *testing.T) {
	b := openTest(t)
	checks := b.Doctor(context.Background(), lock.DoctorRequest{Key: "doctor:t", TTL: 30 * time.Second, Timeout: time.Second})
	names := map[string]lock.Check{}
	for _, c := range checks {
		names[c.Name] = c
	}
	for _, n := range []string{"filesystem", "writable", "flock", "clock"} {
		c, ok := names[n]
		if !ok {
			t.Errorf("no %s check in %+v", n, checks)
			continue
		}
		// The test's temporary directory may sit on a FUSE mount in some
		// sandboxes; a network filesystem or a failing check is a bug here.
		if c.Status == lock.CheckProblem || (n != "filesystem" && c.Status != lock.CheckOK) {
			t.Errorf("%s: %+v, want ok", n, c)
		}
	}
	if ents, _ := os.ReadDir(b.dir); len(ents) != 0 {
		t.Errorf("doctor left %d files in the lock directory: %v", len(ents), ents[0].Name())
	}
}

// TestDoctorUnwritableDir: a directory where no file can be created is a
// problem, said as such (root can write anywhere but /proc).
func TestDoctorUnwritableDir(t *testing.T) {
	b := &Backend{dir: "/proc", prefix: "distlock"}
	checks := b.fileChecks()
	if len(checks) != 1 || checks[0].Name != "writable" || checks[0].Status != lock.CheckProblem || !strings.Contains(checks[0].Detail, "cannot create a file in /proc") {
		t.Errorf("fileChecks on /proc = %+v, want one writable problem", checks)
	}
}

// TestDoctorNetworkFilesystem: the directory's mount is found in the mount
// table (longest mount point, the last of several on one point) and a
// network filesystem is a problem naming its type.
func TestDoctorNetworkFilesystem(t *testing.T) {
	b := openTest(t)
	dir, err := filepath.EvalSymlinks(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(dir)
	for _, tc := range []struct {
		table string
		want  lock.CheckStatus
		says  string
	}{
		{"22 1 0:21 / / rw - ext4 /dev/sda1 rw\n" +
			"30 22 0:40 / " + parent + " rw,relatime shared:5 - nfs4 server:/export rw,vers=4.2\n", lock.CheckProblem, "on nfs4 (server:/export"},
		{"22 1 0:21 / / rw - ext4 /dev/sda1 rw\n" +
			"30 22 0:40 / " + parent + " rw - nfs4 server:/export rw\n" +
			"31 30 0:41 / " + parent + " rw - tmpfs tmpfs rw\n", lock.CheckOK, "on tmpfs"},
		{"22 1 0:21 / / rw - cifs //nas/share rw\n" +
			"30 22 0:40 / " + parent + "/other rw - ext4 /dev/sdb rw\n", lock.CheckProblem, "on cifs"},
		{"22 1 0:21 / / rw - ext4 /dev/sda1 rw\n" +
			"30 22 0:40 / " + parent + " rw - fuse.mystery mystery rw\n", lock.CheckWarning, "FUSE"},
	} {
		path := filepath.Join(t.TempDir(), "mountinfo")
		if err := os.WriteFile(path, []byte(tc.table), 0o600); err != nil {
			t.Fatal(err)
		}
		c := b.mountCheck(path)
		if c.Name != "filesystem" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("mountCheck with\n%s= %+v, want %s saying %q", tc.table, c, tc.want, tc.says)
		}
	}
	if c := b.mountCheck(filepath.Join(t.TempDir(), "none")); c.Status != lock.CheckWarning {
		t.Errorf("mountCheck without a mount table = %+v, want a warning", c)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/my\040disk\134x`); got != `/mnt/my disk\x` {
		t.Errorf("unescapeMount = %q", got)
	}
}
