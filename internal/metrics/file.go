package metrics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path (created if needed, never
// through a link): the file itself is replaced by rename, so its own inode
// cannot carry the lock.
func lockFile(path string) (func(), error) {
	f, err := openRegular(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the flock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s stayed locked by another writer for %s", path, lockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openRegular opens path as os.OpenFile does, except that it follows no
// symbolic link at path, does not wait on a FIFO, and refuses anything but
// a regular file. The textfile directory may be writable by other users
// (node_exporter's often is, by a group); a link or FIFO planted at the
// name would have distlock, often root under cron, create or read a file
// of the planter's choosing, copy a secret into a file anyone can read, or
// hang. Such a name is left as it is.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link, which distlock does not follow: left as it is; %s", path, remedy)
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file: left as it is; %s", path, kind(st.Mode()), remedy)
	}
	return f, nil
}

// remedy is what to do about a name openRegular refuses.
const remedy = "remove it (distlock creates its files itself), or point --metrics-file at a regular file"

// kind names a file type that is not a regular file.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m.IsDir():
		return "a directory"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// replace writes data to a temporary file next to path (named so that the
// textfile collector, which reads *.prom, ignores it) and renames it over
// path.
func replace(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
