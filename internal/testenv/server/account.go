package server

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// account is the user a server runs as. PostgreSQL refuses to run as root
// and MariaDB wants to be told whom to become, and CI runs the tests as
// root: there such a server runs as an unprivileged system user instead.
// Otherwise it runs as the test's own user (cred nil).
type account struct {
	name     string
	uid, gid int
	cred     *syscall.Credential // nil: the test's own user
}

// serverAccount picks the account for a server that must not run as root:
// the test's own user when it is not root, else the first of names that
// exists (Debian's packages create "postgres" and "mysql"), else nobody.
func serverAccount(names ...string) (account, error) {
	if os.Geteuid() != 0 {
		return account{name: "self", uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	for _, n := range append(names, "nobody") {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return account{name: n, uid: uid, gid: gid, cred: &syscall.Credential{
			Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}, // drop root's groups
		}}, nil
	}
	return account{}, fmt.Errorf("running as root and none of %v exists to run the server as", append(names, "nobody"))
}

// chown gives path to the account (a no-op when it is the test's own user).
func (a account) chown(path string) error {
	if a.cred == nil {
		return nil
	}
	return os.Lchown(path, a.uid, a.gid)
}

// privateBase is <tmp>/distlock-testenv-<euid>: where servers that run as
// another user keep their data (every directory above it must be
// traversable by that user, which a test's temporary directory is not), and
// where the once-per-machine templates of their data directories are
// cached. <tmp> is /dev/shm when there is one (memory: copying a template
// there takes a few hundred milliseconds even while other builds keep the
// disk busy, where the disk took seconds; test data need not outlive the
// machine), else $TMPDIR. Its paths are short, as Unix socket paths must be
// (< 108 bytes). It is created 0711 and refused if someone else owns it or
// may write it.
func privateBase() (string, error) {
	tmp := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && fi.Mode().Perm()&0o002 != 0 {
		tmp = "/dev/shm"
	}
	base := filepath.Join(tmp, "distlock-testenv-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(base, 0o711); err != nil && !os.IsExist(err) {
		return "", err
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s is not a directory of ours that only we can write: remove it", base)
	}
	if fi.Mode().Perm()&0o011 != 0o011 {
		if err := os.Chmod(base, 0o711); err != nil {
			return "", err
		}
	}
	return base, nil
}

// privateDir makes a fresh directory under privateBase owned by a, named
// prefix-<our pid>-<random>. Close removes it; the directories of test
// processes that died without Close are removed here.
func privateDir(prefix string, a account) (string, error) {
	base, err := privateBase()
	if err != nil {
		return "", err
	}
	sweepDead(base)
	dir, err := os.MkdirTemp(base, prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	if err := a.chown(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// sweepDead removes the private directories (prefix-<pid>-<random>) of
// test processes that are gone. A pid reused since only delays that.
func sweepDead(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "-", 3)
		if !e.IsDir() || len(parts) != 3 || e.Name() == "templates" {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}
