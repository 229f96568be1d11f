package file

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// bootID is this boot's id, "" when unknown: start times count from boot.
var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(b))
})

// procID names process pid, as this process sees it, for as long as the
// machine runs: "<boot id>/<pid namespace>/<start time in clock ticks
// since boot>" (/proc/PID/stat's 22nd field). ok is false when any part
// cannot be read.
func procID(pid int) (id string, ok bool) {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || bootID() == "" {
		return "", false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// "pid (comm) state ...": comm may hold spaces and ')'; starttime is
	// the 20th field after it.
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	if i < 0 || len(f) < 20 {
		return "", false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%s/%s/%d", bootID(), ns, start), true
}

// signalIfSame sends SIGWINCH to process pid if it is the process named
// id. Through a pidfd, opened before the check: if pid's process ends
// after it is opened, the signal fails rather than reach the pid's next
// process.
func signalIfSame(pid int, id string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if now, ok := procID(pid); ok && now == id {
		unix.PidfdSendSignal(fd, unix.SIGWINCH, nil, 0)
	}
}
