package main

import (
	"bufio"
	"crypto/sha1"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// redisCounter counts top-level commands with MONITOR, bounded by a probe
// connection's INFO commandstats (see main.go's file comment).
type redisCounter struct{ addr string }

type monLine struct {
	client string // "127.0.0.1:PORT", or "lua" for a script's command
	cmd    string // lower case; CLIENT and SCRIPT with their subcommand
}

type redisWindow struct {
	mon, probe net.Conn
	probeAddr  string
	r          *bufio.Reader // the probe's replies

	mu      sync.Mutex
	lines   []monLine
	marks   []int // index in lines just after each of the probe's INFO
	readErr error
	changed chan struct{} // closed and replaced at each line
	stats   []map[string]int64
}

func (c redisCounter) begin() (window, error) {
	mon, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(mon, "MONITOR\r\n"); err != nil {
		mon.Close()
		return nil, err
	}
	mr := bufio.NewReader(mon)
	if ok, err := mr.ReadString('\n'); err != nil || strings.TrimSpace(ok) != "+OK" {
		mon.Close()
		return nil, fmt.Errorf("MONITOR: %q %v", ok, err)
	}
	probe, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		mon.Close()
		return nil, err
	}
	w := &redisWindow{mon: mon, probe: probe, probeAddr: probe.LocalAddr().String(), r: bufio.NewReader(probe), changed: make(chan struct{})}
	go w.read(mr)
	if err := w.mark(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (redisCounter) what() string {
	return "commands clients sent (MONITOR; a script's own commands excluded), checked against INFO commandstats"
}

// read parses MONITOR lines such as
// +1795422042.073242 [0 127.0.0.1:53600] "evalsha" "2ee0…" …
// +1795422042.073304 [0 lua] "ZRANGE" …
func (w *redisWindow) read(r *bufio.Reader) {
	for {
		line, err := r.ReadString('\n')
		w.mu.Lock()
		if err != nil {
			w.readErr = err
			close(w.changed)
			w.mu.Unlock()
			return
		}
		if l, ok := parseMonitor(line); ok {
			w.lines = append(w.lines, l)
			if l.client == w.probeAddr && l.cmd == "info" {
				w.marks = append(w.marks, len(w.lines))
			}
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

func parseMonitor(line string) (monLine, bool) {
	_, rest, ok := strings.Cut(line, " [")
	if !ok {
		return monLine{}, false
	}
	src, rest, ok := strings.Cut(rest, "] ")
	if !ok {
		return monLine{}, false
	}
	_, client, _ := strings.Cut(src, " ")
	args := monitorArgs(rest, 2)
	if len(args) == 0 {
		return monLine{}, false
	}
	cmd := strings.ToLower(args[0])
	switch {
	case len(args) < 2:
	case cmd == "client" || cmd == "script" || cmd == "config":
		cmd += " " + strings.ToLower(args[1])
	case cmd == "evalsha":
		cmd += " " + scriptName(strings.ToLower(args[1]))
	case cmd == "eval":
		cmd += " " + scriptName(fmt.Sprintf("%x", sha1.Sum([]byte(args[1]))))
	}
	return monLine{client: client, cmd: cmd}, true
}

// monitorArgs unquotes up to n of MONITOR's quoted arguments.
func monitorArgs(s string, n int) []string {
	var args []string
	for len(args) < n {
		s = strings.TrimLeft(s, " ")
		if !strings.HasPrefix(s, `"`) {
			break
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			break
		}
		a, err := strconv.Unquote(q)
		if err != nil {
			a = q[1 : len(q)-1]
		}
		args = append(args, a)
		s = s[len(q):]
	}
	return args
}

// mark sends INFO commandstats on the probe, keeps its figures, and waits
// until MONITOR has shown that INFO: every command run before it has been
// read then.
func (w *redisWindow) mark() error {
	w.probe.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(w.probe, "INFO commandstats\r\n"); err != nil {
		return err
	}
	head, err := w.r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(head, "$") {
		return fmt.Errorf("INFO: %q", head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return fmt.Errorf("INFO: %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(w.r, body); err != nil {
		return err
	}
	w.stats = append(w.stats, parseCommandstats(string(body)))
	want := len(w.stats)
	deadline := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		got, err, changed := len(w.marks), w.readErr, w.changed
		w.mu.Unlock()
		if got >= want {
			return nil
		}
		if err != nil {
			return fmt.Errorf("MONITOR: %w", err)
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("MONITOR never showed the probe's INFO")
		}
	}
}

// parseCommandstats reads cmdstat_NAME:calls=N,… lines.
func parseCommandstats(s string) map[string]int64 {
	m := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, ",")
		m[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(v, 10, 64)
	}
	return m
}

func (w *redisWindow) close() {
	w.mon.Close()
	w.probe.Close()
}

func (w *redisWindow) end() (Count, error) {
	defer w.close()
	if err := w.mark(); err != nil {
		return Count{}, err
	}
	w.mu.Lock()
	lines := w.lines[w.marks[0]:w.marks[1]]
	w.mu.Unlock()
	c := Count{ByCommand: map[string]int64{}, Connections: map[string]int{}}
	clients := map[string][]string{}
	var lua int64
	for _, l := range lines {
		switch l.client {
		case "lua":
			lua++
		case w.probeAddr:
		default:
			c.Requests++
			c.ByCommand[l.cmd]++
			clients[l.client] = append(clients[l.client], l.cmd)
		}
	}
	c.Clients = len(clients)
	for _, cmds := range clients {
		c.Connections[sequence(cmds)]++
	}
	// Cross-check: every call commandstats counted between the two INFOs
	// (the first INFO is counted by the second, not by itself), less the
	// scripts' own commands.
	var calls int64
	for name, v := range w.stats[1] {
		calls += v - w.stats[0][name]
	}
	if top := calls - 1 - lua; top != c.Requests {
		c.Mismatch = fmt.Sprintf("INFO commandstats counted %d top-level calls, MONITOR showed %d", top, c.Requests)
	}
	return c, nil
}

// sequence is cmds with runs of one command folded: "hello, ping, evalsha ×3".
func sequence(cmds []string) string {
	var parts []string
	for i := 0; i < len(cmds); {
		j := i
		for j < len(cmds) && cmds[j] == cmds[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", cmds[i], j-i))
		} else {
			parts = append(parts, cmds[i])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}
