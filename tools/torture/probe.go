package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "start %d %d %d %s %d %d\n", token, *contender, os.Getppid(), slotOf(), start, *launched)
	hold, err := readHold(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 5
	}
	if err := probeWrite(c, r, token); err != nil {
		return 6
	}
	time.Sleep(hold)
	if err := probeWrite(c, r, token); err != nil {
		return 6
	}
	fmt.Fprintf(c, "end %d\n", time.Now().UnixNano())
	return 0
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

// probeWrite makes one fenced write and waits for its answer.
func probeWrite(c net.Conn, r *bufio.Reader, token uint64) error {
	if _, err := fmt.Fprintf(c, "write %d\n", token); err != nil {
		return err
	}
	_, err := r.ReadString('\n')
	return err
}
