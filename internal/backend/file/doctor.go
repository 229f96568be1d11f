package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor: the directory is on a local filesystem,
// writable, and flock(2) excludes a second open file description, and no
// older build's default directory still holds locks (olddirs.go); the
// file engine has no clock of its own to compare.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	checks := append([]lock.Check{b.mountCheck("/proc/self/mountinfo")}, b.fileChecks()...)
	checks = append(checks, b.olderDirChecks()...)
	return append(checks, lock.Check{
		Name: "clock", Status: lock.CheckOK,
		Detail: "the file engine times leases with this machine's own clock: there is no other clock to compare",
	})
}

// networkFS are filesystem types whose flock(2) is not the local kernel's:
// NFS emulates it with byte-range locks through a lock manager, CIFS and
// the cluster filesystems with their own protocols, and none of them
// frees a lock the moment its holder dies the way a local flock is.
var networkFS = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true,
	"ncpfs": true, "afs": true, "9p": true, "ceph": true, "glusterfs": true,
	"lustre": true, "gpfs": true, "ocfs2": true, "gfs2": true, "davfs": true,
	"fuse.sshfs": true, "fuse.glusterfs": true, "fuse.cephfs": true,
	"fuse.s3fs": true, "fuse.rclone": true, "fuse.gcsfuse": true,
}

// mountCheck finds the filesystem that holds the lock directory in the
// mount table at path (/proc/self/mountinfo) and judges its type.
func (b *Backend) mountCheck(path string) lock.Check {
	c := lock.Check{Name: "filesystem", Status: lock.CheckWarning,
		Fix: "make sure the lock directory is on a local disk (not NFS, CIFS or FUSE): flock(2) there is the local kernel's"}
	dir, err := filepath.EvalSymlinks(b.dir)
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err != nil {
		c.Status, c.Detail = lock.CheckProblem, fmt.Sprintf("cannot resolve the lock directory %s: %v", b.dir, errors.Unwrap(err))
		c.Fix = "give --backend file://DIR a directory that exists and that this user can reach"
		return c
	}
	f, err := os.Open(path)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot read the mount table (%s) to find the filesystem of %s", path, dir)
		return c
	}
	defer f.Close()
	m, ok, err := mountOf(f, dir)
	if err != nil || !ok {
		c.Detail = fmt.Sprintf("cannot find the filesystem of %s in %s", dir, path)
		return c
	}
	on := fmt.Sprintf("%s is on %s (%s, mounted at %s)", dir, m.fsType, m.source, m.point)
	return lock.FirstCase(c.Name, []lock.Case{
		{When: networkFS[m.fsType], Status: lock.CheckProblem, Detail: on + ": a network filesystem",
			Fix: "use a directory on a local disk (file://DIR): the file engine locks one machine, and flock(2) on " + m.fsType +
				" is emulated by a lock protocol that does not free a dead holder's lock at once; to lock across machines use redis:// or etcd://"},
		{When: strings.HasPrefix(m.fsType, "fuse"), Status: lock.CheckWarning, Detail: on + ": a FUSE filesystem, whose flock(2) is whatever its daemon makes of it",
			Fix: "use a directory on a local disk (file://DIR), such as the default, /tmp/distlock-<uid>"},
	}, lock.Case{Detail: on + ": local"})
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point, fsType, source string
}

// mountOf reads a mountinfo table and returns the mount that holds dir (an
// absolute path without symlinks): the longest mount point that contains
// it, the last one listed when several are mounted on the same point (a
// later mount hides an earlier one).
func mountOf(r io.Reader, dir string) (mount, bool, error) {
	var best mount
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - type source superoptions
		fields := strings.Fields(sc.Text())
		sep := 6 + slices.Index(fields[min(6, len(fields)):], "-")
		if sep < 6 || len(fields) < sep+3 {
			continue
		}
		m := mount{point: unescapeMount(fields[4]), fsType: fields[sep+1], source: unescapeMount(fields[sep+2])}
		if m.point != "/" && !strings.HasPrefix(dir+"/", m.point+"/") {
			continue // not dir's mount point, nor above it
		}
		if !found || len(m.point) >= len(best.point) {
			best, found = m, true
		}
	}
	return best, found, sc.Err()
}

// mountEscape is one of mountinfo's octal escapes (\040 for a space, ...).
var mountEscape = regexp.MustCompile(`\\[0-7]{3}`)

// unescapeMount undoes mountinfo's octal escapes: each is one byte.
func unescapeMount(s string) string {
	return mountEscape.ReplaceAllStringFunc(s, func(e string) string {
		c, _ := strconv.ParseUint(e[1:], 8, 16)
		return string([]byte{byte(c)})
	})
}

// fileChecks creates a scratch file in the directory (writable), then
// opens it a second time and checks that an exclusive flock(2) through one
// open file description refuses another, and allows it once let go: the
// same exclusion two distlock processes rely on.
func (b *Backend) fileChecks() []lock.Check {
	if b.dirErr != nil {
		c := lock.Check{Name: "writable", Status: lock.CheckProblem, Detail: b.dirErr.Error(),
			Fix: "give --backend file:///DIR a directory this user can create, or create it and make it writable by the user that runs distlock"}
		if refused := (*lock.UnavailableError)(nil); errors.As(b.dirErr, &refused) && refused.Refused {
			// checkOwnDir: the detail says what is wrong and what to do.
			c.Name, c.Fix = "private", "the default lock directory must be yours alone: whoever can write in it could plant links at the names of its files"
		}
		return []lock.Check{c}
	}
	f, err := os.CreateTemp(b.dir, fmt.Sprintf(".doctor-%d-*.tmp", os.Getpid()))
	if err != nil {
		return []lock.Check{{Name: "writable", Status: lock.CheckProblem,
			Detail: fmt.Sprintf("cannot create a file in %s: %v", b.dir, errors.Unwrap(err)),
			Fix:    "make the directory writable by the user that runs distlock: every lock is a file created there"}}
	}
	defer os.Remove(f.Name())
	defer f.Close()
	checks := []lock.Check{{Name: "writable", Status: lock.CheckOK, Detail: fmt.Sprintf("created and removed a file in %s", b.dir)}}
	return append(checks, flockCheck(f))
}

func flockCheck(f *os.File) lock.Check {
	const name = "flock"
	problem := func(detail string) lock.Check {
		return lock.Check{Name: name, Status: lock.CheckProblem, Detail: detail,
			Fix: "use a directory on a local disk (file://DIR): distlock's file engine needs flock(2) to exclude other processes"}
	}
	second, err := os.OpenFile(f.Name(), os.O_RDONLY|noFollow, 0)
	if err != nil {
		return problem(fmt.Sprintf("cannot open %s a second time: %v", f.Name(), errors.Unwrap(err)))
	}
	defer second.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return problem(fmt.Sprintf("flock(LOCK_EX) on %s failed: %v", f.Name(), err))
	}
	err = syscall.Flock(int(second.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return problem(fmt.Sprintf("flock(LOCK_EX) on %s was granted to a second open file while the first held it: this filesystem does not exclude", f.Name()))
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return problem(fmt.Sprintf("a second flock(LOCK_EX) on %s failed with %v, not \"would block\"", f.Name(), err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return problem(fmt.Sprintf("flock(LOCK_UN) on %s failed: %v", f.Name(), err))
	}
	if err := syscall.Flock(int(second.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return problem(fmt.Sprintf("flock(LOCK_EX) on %s stayed refused after the first holder let go: %v", f.Name(), err))
	}
	return lock.Check{Name: name, Status: lock.CheckOK,
		Detail: "an exclusive flock(2) on one open file refused a second one, and allowed it once let go"}
}
