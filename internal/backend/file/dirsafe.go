package file

// The lock directory is trusted with nothing it holds: a file of ours
// there is never a symbolic link (distlock makes none), so every file the
// engine opens or creates in it is opened with noFollow, and a file it
// writes by rename is first created under a name no one else can guess
// (tmpName), exclusively (O_EXCL: neither a link nor a file put there by
// someone else is written through). The default directory, which
// distlock picks itself in the world-writable /tmp, must also be ours
// alone (checkOwnDir): else whoever made it could plant our files' names
// in it. A directory the user names is not
// held to that (a group may share one on purpose).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/distlock/distlock/internal/lock"
)

// noFollow makes an open fail (ELOOP) on a symbolic link.
const noFollow = unix.O_NOFOLLOW

// errNotRegular: a name of ours in the lock directory is something else
// than a file (a FIFO, a device, a directory someone put there).
var errNotRegular = errors.New("not a regular file (distlock makes only files there: remove it)")

// openFile opens the file of ours at path, never through a link, and only
// if it is a regular file: O_NONBLOCK keeps the open of a FIFO planted at
// the name from waiting for a writer (for ever), and the check refuses it
// (a read from it would wait too). O_NONBLOCK does nothing to a file.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &os.PathError{Op: "open", Path: path, Err: errNotRegular}
		}
		return nil, err
	}
	return f, nil
}

// readFile reads the file of ours at path (openFile's rules) and says when
// it was last written.
func readFile(path string) (data []byte, modTime time.Time, err error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, modTime, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, modTime, err
	}
	data, err = io.ReadAll(f)
	return data, st.ModTime(), err
}

// tmpSalt makes this process's temporary file names unguessable.
var tmpSalt = func() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand panics rather)
	return hex.EncodeToString(b)
}()

// tmpName is the temporary file that a write of path renames into place.
func tmpName(path string) string {
	return path + ".tmp" + strconv.Itoa(os.Getpid()) + "-" + tmpSalt
}

// createExcl creates the file at path, which must not exist yet, for
// writing.
func createExcl(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
}

// checkOwnDir checks that dir, the default lock directory, is a directory
// (not a link to one) owned by this user that no one else may write in.
// Its error is a refusal (exit 77): trying again cannot help.
func checkOwnDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return unavailable("check lock directory "+dir, err)
	}
	uid, fix := os.Getuid(), "remove it if you can, or name a directory of your own with --backend file:///path (or DISTLOCK_BACKEND)"
	var problem string
	sys, _ := st.Sys().(*syscall.Stat_t) // what os.Lstat gives on every unix
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		problem = "is a symbolic link, not a directory"
	case !st.IsDir():
		problem = "is not a directory"
	case sys != nil && int(sys.Uid) != uid:
		problem = fmt.Sprintf("is owned by uid %d, not you (uid %d): someone else made it", sys.Uid, uid)
	case st.Mode().Perm()&0o022 != 0:
		problem = fmt.Sprintf("has mode %04o: others may write in it", st.Mode().Perm())
		fix = "run chmod go-w " + dir + ", or name a directory with --backend file:///path (or DISTLOCK_BACKEND)"
	default:
		return nil
	}
	return &lock.UnavailableError{Msg: fmt.Sprintf("%s %s; %s", dir, problem, fix), Refused: true}
}

// checkRealDir checks that dir, a directory the engine made inside the
// lock directory (a run ledger), is not a link to one elsewhere.
func checkRealDir(dir string) error {
	st, err := os.Lstat(dir)
	if err == nil && !st.IsDir() {
		err = &os.PathError{Op: "lstat", Path: dir, Err: unix.ENOTDIR}
	}
	return err
}

// touch sets both times of the file at path (never through a link) to t.
func touch(path string, t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: path, Err: err}
	}
	return nil
}
