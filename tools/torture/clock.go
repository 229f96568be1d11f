package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// libfaketime is Debian's faketime library (package faketime).
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// faketime runs a server under libfaketime with a timestamp file whose
// offset the tool rewrites: the server's wall clock jumps at once (its
// monotonic clock is left alone). Only C servers that read the time
// through libc can be faked: redis-server, PostgreSQL, MariaDB (etcd is a
// Go binary, which reads the clock without libc; ZooKeeper's sessions run
// on the JVM's monotonic clock).
type faketime struct {
	file   string
	offset time.Duration
}

func newFaketime(dir string) (*faketime, error) {
	if _, err := os.Stat(libfaketime); err != nil {
		return nil, fmt.Errorf("faketime not installed: %w", err)
	}
	// readable by servers that run as their own user
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	f := &faketime{file: filepath.Join(dir, "faketime")}
	return f, f.write()
}

func (f *faketime) env() []string {
	return []string{"LD_PRELOAD=" + libfaketime, "FAKETIME_TIMESTAMP_FILE=" + f.file,
		"FAKETIME_NO_CACHE=1", "DONT_FAKE_MONOTONIC=1"}
}

func (f *faketime) write() error {
	tmp := f.file + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%+d\n", int64(f.offset/time.Second)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.file)
}

// jump moves the server's wall clock forward by d (whole seconds).
func (f *faketime) jump(d time.Duration) error {
	f.offset += d.Round(time.Second)
	return f.write()
}
