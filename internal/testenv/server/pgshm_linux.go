package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// removePostgresShm removes the System V shared memory segment a killed
// postmaster leaves behind, named on the seventh line of data's
// postmaster.pid ("<key> <id>"). A postmaster removes its segment when it
// exits by itself; Kill and Close end it with SIGKILL, and every segment
// left over counts against the kernel's limit (kernel.shmmni, 4096 by
// default): after a few thousand test servers no PostgreSQL could start on
// the machine ("could not create shared memory segment: No space left on
// device"). A restart reuses or removes the old segment itself; this is for
// the last kill, before the data directory (and the file naming the
// segment) goes. Only a segment nobody is attached to is removed.
func removePostgresShm(data string) {
	id, ok := postgresShm(data)
	if !ok {
		return
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || ds.Nattch != 0 {
		return
	}
	_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
}

// postgresShm is the segment id postmaster.pid in data names.
func postgresShm(data string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return 0, false
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return 0, false
	}
	id, err := strconv.Atoi(f[1])
	return id, err == nil && id >= 0
}
