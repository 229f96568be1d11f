package file

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/distlock/distlock/internal/lock"
)

// The file engine's release notification (issue 11; docs/ARCHITECTURE.md,
// "file"). A waiter never blocks in flock(2), which cannot be cancelled: a
// holder that lets go touches the lock file's times (touchReleased), a
// waiter watches for that (IN_ATTRIB) and then makes an ordinary
// non-blocking try, so an abandoned wait holds nothing. A flock the kernel
// frees (a holder that died) changes no times: the next poll finds it.

// touchReleased marks the lock file of f as just released: the times of
// the file change (IN_ATTRIB for the waiters' watches). Best effort: a
// waiter still polls.
func touchReleased(f *os.File) {
	// utimensat(fd, NULL, NULL, 0): futimens(fd, NULL), both times now.
	unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, 0, 0, 0, 0)
}

// watchReleases watches lockPath for releases (touchReleased), or its
// removal or renaming; each sends on the channel (a value is kept, never
// queued). stop ends the watch.
func watchReleases(_ context.Context, lockPath string) (<-chan struct{}, func(), error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, lockPath, unix.IN_ATTRIB|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_DONT_FOLLOW); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify:"+lockPath) // non-blocking: read through the poller
	buf := make([]byte, 4096)
	out, _ := lock.Relay(func() error { // until stop closes f
		_, err := f.Read(buf)
		return err
	})
	return out, func() { f.Close() }, nil
}
