// Package procfs says whether /proc can be trusted to describe this
// process's processes: the one rule distlock's readers of /proc share
// (internal/child's scan of the command's group, the file engine's record
// of its holder). It knows nothing else of distlock.
package procfs

import (
	"os"
	"path/filepath"
	"strconv"
)

// Own reports whether /proc is the proc filesystem of this process's pid
// namespace, where /proc/PID is process PID as this process numbers it.
// Not when /proc is not mounted, nor when it is another pid namespace's
// (`unshare -pf` without --mount-proc: /proc/self is not this process's
// pid there, and /proc/PID names someone else).
func Own() bool { return isProc("/proc") && ownAt("/proc", os.Getpid()) }

// ownAt reports whether root/self, the link procfs resolves to the reading
// process, names pid.
func ownAt(root string, pid int) bool {
	self, err := os.Readlink(filepath.Join(root, "self"))
	return err == nil && self == strconv.Itoa(pid)
}
