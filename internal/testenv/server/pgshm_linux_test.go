package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Close leaves no shared memory segment behind: the postmaster is killed
// (SIGKILL), which would leave it, and a few thousand of them stop any
// PostgreSQL from starting on the machine.
func TestPostgresCloseRemovesSharedMemory(t *testing.T) {
	dir := t.TempDir()
	p, err := StartPostgres(dir)
	p = started(t, p, err)
	data, err := os.Readlink(filepath.Join(dir, "postgres.data"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := postgresShm(data)
	if !ok {
		t.Fatalf("postmaster.pid in %s names no shared memory segment", data)
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
		t.Fatalf("segment %d of the running server: %v", id, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
		t.Errorf("segment %d still there after Close (IPC_STAT: %v, %d attached)", id, err, ds.Nattch)
	}
}
