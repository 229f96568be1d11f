package zookeeper

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// headroomCheck compares, on each server, the sessions from this host
// with the server's maxClientCnxns (a limit per client IP), read with the
// conf and cons four-letter words; the worst server is reported. Servers
// that do not allow those words (4lw.commands.whitelist) cannot tell.
func (b *Backend) headroomCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	var worst lock.Check
	for _, s := range b.servers {
		c := serverHeadroom(ctx, s, req.Timeout)
		if worst.Name == "" || rank(c.Status) > rank(worst.Status) {
			worst = c
		}
	}
	return worst
}

func rank(s lock.CheckStatus) int {
	switch s {
	case lock.CheckProblem:
		return 2
	case lock.CheckWarning:
		return 1
	}
	return 0
}

// serverHeadroom is one server's check.
func serverHeadroom(ctx context.Context, server string, timeout time.Duration) lock.Check {
	conf, _, err := fourLetter(ctx, server, "conf", timeout)
	var cons string
	var us net.IP
	if err == nil {
		cons, us, err = fourLetter(ctx, server, "cons", timeout)
	}
	limit, lerr := parseMaxCnxns(conf)
	if err != nil || lerr != nil {
		why := lerr
		if err != nil {
			why = err
		}
		return lock.Check{Name: "connections", Status: lock.CheckWarning,
			Detail: fmt.Sprintf("cannot tell how many more connections %s accepts from this host: %v", server, why),
			Fix:    "allow the conf and cons four-letter words (4lw.commands.whitelist in zoo.cfg) to have doctor check maxClientCnxns"}
	}
	c := lock.ConnectionHeadroomCheck("maxClientCnxns", sessionsFrom(cons, us), limit,
		"raise maxClientCnxns in zoo.cfg on every server (60 by default), or run fewer distlock processes on this host")
	c.Detail += fmt.Sprintf(" (sessions from this host, %s, on %s: the limit is per client IP)", us, server)
	return c
}

// fourLetter sends a four-letter word and reads the whole answer; it
// returns our address as the server sees it too.
func fourLetter(ctx context.Context, server, word string, timeout time.Duration) (string, net.IP, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, word); err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	if err != nil {
		return "", nil, err
	}
	s := string(b)
	if strings.Contains(s, "not in the whitelist") {
		return "", nil, fmt.Errorf("the server does not allow %q (4lw.commands.whitelist)", word)
	}
	if s == "" {
		return "", nil, fmt.Errorf("%q: no answer (the server closed the connection: at its maxClientCnxns?)", word)
	}
	return s, c.LocalAddr().(*net.TCPAddr).IP, nil
}

// parseMaxCnxns reads maxClientCnxns from conf's answer (0: no limit).
func parseMaxCnxns(conf string) (int, error) {
	for _, line := range strings.Split(conf, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxClientCnxns="); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("conf names no maxClientCnxns")
}

// sessionsFrom counts cons's connections from ip that have a session,
// lines such as " /127.0.0.1:45678[1](queued=0,recved=5,…,sid=0x1000…,…)".
func sessionsFrom(cons string, ip net.IP) int {
	n := 0
	for _, line := range strings.Split(cons, "\n") {
		addr, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "/"), "[")
		if !ok || !strings.Contains(line, "sid=") {
			continue
		}
		host := addr
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			host = addr[:i]
		}
		if h := net.ParseIP(host); h != nil && h.Equal(ip) {
			n++
		}
	}
	return n
}
