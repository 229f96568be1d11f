package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// probeMain is the command run under the lock (`torture probe --addr A
// --contender N`). It opens one connection to the register for its whole
// section: it reports its start (its own clock reading, taken first
// thing), makes a fenced write with DISTLOCK_TOKEN, holds as long as the
// register says, writes again (a holder that outlived its lease shows up
// as a second write), reports its end and exits. A probe that is killed
// never reports its end: the register takes the moment it sees the
// connection close, which is never earlier than the death.
func probeMain(args []string) int {
	start := time.Now().UnixNano()
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	addr := fs.String("addr", "", "register address")
	contender := fs.Int("contender", -1, "contender number")
	launched := fs.Int64("launched", 0, "when the tool launched this distlock (wall-clock ns)")
	extendWith := fs.String("extend-with", "", "mode handle: distlock binary to extend DISTLOCK_HANDLE with half-way")
	backend := fs.String("backend", "", "mode handle: the engine URL for extend")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	token, err := strconv.ParseUint(os.Getenv("DISTLOCK_TOKEN"), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe: DISTLOCK_TOKEN:", err)
		return 3
	}
	c, err := net.Dial("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 4
	}
	defer c.Close()
	pc := &probeConn{c: c}
	go pc.onTerm()
	r := bufio.NewReader(c)
	pc.printf("start %d %d %d %s %d %d\n", token, *contender, os.Getppid(), slotOf(), start, *launched)
	hold, err := readHold(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 5
	}
	if err := pc.write(r, token); err != nil {
		return 6
	}
	if *extendWith != "" {
		time.Sleep(hold / 2)
		ext := exec.Command(*extendWith, "--backend", *backend, "--connect-timeout", "2s", "extend")
		if ext.Run() != nil { // the handle lost its lock (or the engine is away): stop
			pc.end()
			return 0
		}
		hold /= 2
	}
	time.Sleep(hold)
	if err := pc.write(r, token); err != nil {
		return 6
	}
	pc.end()
	return 0
}

// probeConn serializes what the probe sends: its main line and its
// SIGTERM handler both write.
type probeConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (pc *probeConn) printf(format string, args ...any) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	fmt.Fprintf(pc.c, format, args...)
}

// end reports the section's end, stamped as late as possible.
func (pc *probeConn) end() {
	pc.mu.Lock() // held until exit: nothing is sent after the end
	fmt.Fprintf(pc.c, "end %d\n", time.Now().UnixNano())
}

// onTerm: distlock stops a command with SIGTERM when its lease is going
// or gone. The probe reports its end and exits at once, so that its end
// is its own clock reading, not when the register next got to run and
// saw the connection close (on a loaded machine tens of milliseconds
// later, which would show a false overlap with the next holder).
func (pc *probeConn) onTerm() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	<-ch
	pc.end()
	os.Exit(143)
}

func slotOf() string {
	if s := os.Getenv("DISTLOCK_SLOT"); s != "" {
		return s
	}
	return "-"
}

func readHold(r *bufio.Reader) (time.Duration, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "hold "), 10, 64)
	return time.Duration(ns), err
}

// write makes one fenced write and waits for its answer.
func (pc *probeConn) write(r *bufio.Reader, token uint64) error {
	pc.printf("write %d\n", token)
	_, err := r.ReadString('\n')
	return err
}
