package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// term: a terminal a scenario types into, as a person would. script(1)
// gives a command a terminal but takes all its input at once; job control
// needs keys typed at chosen moments (a line, then Ctrl-Z, then fg).

// terminal is one pseudo-terminal and the session running on it.
type terminal struct {
	master *os.File
	cmd    *exec.Cmd
	exited chan struct{}

	mu     sync.Mutex
	screen []byte // everything written to the terminal so far
	seen   int    // the end of the last `term wait` match
}

var (
	terminalsMu sync.Mutex
	terminals   = map[*testscript.TestScript]map[string]*terminal{}
)

// term start NAME COMMAND [ARGS...]: run COMMAND as the leader of a new
// session whose controlling terminal is a fresh pseudo-terminal (as a
// login shell is). With bash, start it as `bash --norc --noprofile
// --noediting -i`: an interactive shell with job control.
// term type NAME TEXT: type TEXT (Go escapes: \n, \x1a for Ctrl-Z, \x03
// for Ctrl-C).
// term wait [-t D] NAME REGEXP: wait until the terminal shows a match of
// REGEXP after the previous wait's match. What is typed is echoed when the
// terminal reads it, which may be later: wait for the prompt ('\$ $')
// before typing the next command.
// term exit [-t D] NAME: wait until the session's leader has exited.
// Everything still running on the terminal is killed when the script ends,
// and what it showed is logged.
func cmdTerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: term start|type|wait|exit NAME ...")
	}
	op, args := args[0], args[1:]
	timeout, args := timeoutArg(ts, args)
	name := args[0]
	terminalsMu.Lock()
	if terminals[ts] == nil {
		terminals[ts] = map[string]*terminal{}
		ts.Defer(func() {
			terminalsMu.Lock()
			defer terminalsMu.Unlock()
			delete(terminals, ts)
		})
	}
	t := terminals[ts][name]
	terminalsMu.Unlock()
	if op != "start" && t == nil {
		ts.Fatalf("no terminal %s: term start it first", name)
	}
	switch op {
	case "start":
		if t != nil || len(args) < 2 {
			ts.Fatalf("usage: term start NAME COMMAND [ARGS...] (once per NAME)")
		}
		t = startTerminal(ts, name, args[1], args[2:])
		terminalsMu.Lock()
		terminals[ts][name] = t
		terminalsMu.Unlock()
	case "type":
		if len(args) != 2 {
			ts.Fatalf("usage: term type NAME TEXT")
		}
		text, err := strconv.Unquote(`"` + strings.ReplaceAll(args[1], `"`, `\"`) + `"`)
		ts.Check(err)
		_, err = t.master.Write([]byte(text))
		ts.Check(err)
	case "wait":
		if len(args) != 2 {
			ts.Fatalf("usage: term wait [-t D] NAME REGEXP")
		}
		re, err := regexp.Compile("(?m)" + args[1])
		ts.Check(err)
		waitUntil(ts, fmt.Sprintf("%q on terminal %s", args[1], name), timeout, func() bool {
			t.mu.Lock()
			defer t.mu.Unlock()
			loc := re.FindIndex(t.screen[t.seen:])
			if loc == nil {
				return false
			}
			t.seen += loc[1]
			return true
		})
	case "exit":
		if len(args) != 1 {
			ts.Fatalf("usage: term exit [-t D] NAME")
		}
		select {
		case <-t.exited:
		case <-time.After(timeout):
			ts.Fatalf("the session on terminal %s did not end within %s", name, timeout)
		}
	default:
		ts.Fatalf("unknown term operation %q", op)
	}
}

func startTerminal(ts *testscript.TestScript, term, name string, args []string) *terminal {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	ts.Check(err)
	mfd := int(master.Fd()) // blocking from here on: read by a goroutine
	ts.Check(unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	ts.Check(err)
	ts.Check(unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 250}))
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	ts.Check(err)
	defer slave.Close()

	c := scriptCommand(ts, name, args...)
	c.Env = append(c.Env, "PS1=$ ", "TERM=dumb")
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	ts.Check(c.Start())
	t := &terminal{master: master, cmd: c, exited: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			t.mu.Lock()
			t.screen = append(t.screen, buf[:n]...)
			t.mu.Unlock()
			if err != nil { // EIO once nothing has the terminal open
				return
			}
		}
	}()
	go func() {
		c.Wait()
		close(t.exited)
	}()
	ts.Defer(func() {
		// The whole session: the shell, its jobs and what they started.
		for _, pid := range sessionMembers(c.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-t.exited:
		case <-time.After(5 * time.Second):
		}
		master.Close()
		t.mu.Lock()
		ts.Logf("terminal %s showed:\n%s", term, t.screen)
		t.mu.Unlock()
	})
	return t
}

// sessionMembers lists the processes of session sid.
func sessionMembers(sid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			pids = append(pids, pid)
		}
	}
	return pids
}
