package procfs

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// /proc is trusted only where its self link names this process: a /proc
// of another pid namespace names another number, and a directory with no
// such link (nothing mounted) names none.
func TestOwnAtReadsSelf(t *testing.T) {
	root := t.TempDir()
	if ownAt(root, os.Getpid()) {
		t.Error("a /proc without a self link is trusted")
	}
	if err := os.Symlink(strconv.Itoa(os.Getpid()+1), filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	if ownAt(root, os.Getpid()) {
		t.Error("a /proc whose self names another pid (another pid namespace's) is trusted")
	}
	if !ownAt(root, os.Getpid()+1) {
		t.Error("a /proc whose self names the process is not trusted")
	}
}

// The real one: this machine's tests run with their own /proc mounted.
func TestOwnOnThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		if Own() {
			t.Fatal("Own outside Linux")
		}
		return
	}
	if !Own() {
		t.Fatal("/proc is not trusted, though the tests run with their own /proc mounted")
	}
	if isProc(t.TempDir()) {
		t.Fatal("a plain directory is taken for a proc filesystem")
	}
}
