//go:build linux && (amd64 || arm64)

package child

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The forked watcher and pin (fork_linux.go) name themselves and hold
// none of distlock's descriptors: `pkill -f` of distlock's command line
// misses them, and whoever reads distlock's output sees its end when
// distlock ends.
func TestForkedWatcherNamesAndDescriptors(t *testing.T) {
	p, err := Start(Spec{Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.WatcherError() != nil {
		t.Fatal(p.WatcherError())
	}
	defer func() {
		p.Signal(syscall.SIGKILL)
		p.Supervise(Control{KillGrace: time.Second})
	}()
	ownArgs := strings.Join(os.Args[1:], "\x00")
	// The watcher says it is ready once the pin leads its group; the pin
	// names itself and closes what it inherited a moment later: wait for
	// that, then report what is still wrong.
	var wrong []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		wrong = forkedNamesAndDescriptors(p, ownArgs)
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, w := range wrong {
		t.Error(w)
	}
}

// forkedNamesAndDescriptors says what is wrong with the names and
// descriptors of p's watcher and pin (TestForkedWatcherNamesAndDescriptors).
func forkedNamesAndDescriptors(p *Process, ownArgs string) (wrong []string) {
	for _, c := range []struct {
		pid        int
		comm, argv string
	}{{p.watcher.pid, "distlock-watch", WatchArg}, {p.pgid, "distlock-pin", PinArg}} {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/comm")
		if strings.TrimSpace(string(comm)) != c.comm {
			wrong = append(wrong, fmt.Sprintf("process %d is called %q, want %q", c.pid, comm, c.comm))
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/cmdline")
		if !bytes.Contains(cmdline, []byte("\x00"+c.argv+"\x00")) || ownArgs != "" && bytes.Contains(cmdline, []byte(ownArgs)) {
			wrong = append(wrong, fmt.Sprintf("process %d's command line is %q: want distlock %s, not ours", c.pid, cmdline, c.argv))
		}
		// Not distlock's stdin, stdout, stderr (nor anything else of it):
		// the watcher has /dev/null there, the pin only its pipe.
		for fd := 0; fd < 3; fd++ {
			target, err := os.Readlink("/proc/" + strconv.Itoa(c.pid) + "/fd/" + strconv.Itoa(fd))
			switch {
			case c.pid == p.watcher.pid && target != "/dev/null":
				wrong = append(wrong, fmt.Sprintf("the watcher's descriptor %d is %q (%v), want /dev/null", fd, target, err))
			case c.pid == p.pgid && fd == 0 && !strings.HasPrefix(target, "pipe:"):
				wrong = append(wrong, fmt.Sprintf("the pin's stdin is %q (%v), want its pipe", target, err))
			case c.pid == p.pgid && fd > 0 && err == nil:
				wrong = append(wrong, fmt.Sprintf("the pin holds descriptor %d (%s)", fd, target))
			}
		}
	}
	return wrong
}

// The forked watcher trusts /proc as procfs.Own does: a self link that
// does not name it is another pid namespace's /proc.
func TestForkedWatcherTrustsOnlyOwnProc(t *testing.T) {
	p := scanPlan()
	if !forkedProcOwn(p) {
		t.Fatal("the forked watcher does not trust this machine's /proc")
	}
	for _, target := range []string{strconv.Itoa(os.Getpid() + 1), "self"} {
		link := filepath.Join(t.TempDir(), "self")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		clear(p.self[:])
		copy(p.self[:], link)
		if forkedProcOwn(p) {
			t.Errorf("a /proc whose self link names %q is trusted", target)
		}
		if forkedGroupGone(p, os.Getpid()) {
			t.Errorf("with a /proc whose self link names %q, the watcher takes the group for gone", target)
		}
	}
}
