package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor: the session timeout the servers grant for
// --ttl (a lease is the session), whether they allow TTL nodes (holds),
// the server's clock, which stamps the holds' start (mtime), and the
// connections this host may still open (headroomCheck).
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{b.sessionCheck(ctx, req), b.ttlNodeCheck(ctx, req), b.clockCheck(ctx, req), b.headroomCheck(ctx, req)}
}

// sessionCheck asks for a session of --ttl and judges what was granted.
func (b *Backend) sessionCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	s, err := b.dial(cctx, req.TTL)
	if err != nil {
		return lock.CannotCheck("session-timeout", "open a session to check", err, "run doctor again once the ensemble answers")
	}
	defer s.close(time.Second)
	got := time.Duration(s.negotiated.Load()) * time.Millisecond
	return lock.GrantedTTLCheck("session-timeout", "session", req.TTL, got, req.TTL/10, "",
		fmt.Sprintf("use --ttl %s or less, or raise the servers' maxSessionTimeout (20 ticks by default)", got),
		"use a --ttl of at least the servers' minSessionTimeout (2 ticks by default)")
}

// ttlNodeCheck creates and deletes a scratch TTL node.
func (b *Backend) ttlNodeCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	path := b.root + "/.doctor-ttl-" + newNonce()
	s, done, err := b.useAdmin(cctx)
	if err == nil {
		defer done()
		err = s.createTTL(cctx, path, nil, time.Minute)
	}
	switch {
	case err == nil:
		_ = s.remove(cctx, path, -1)
		return lock.Check{Name: "ttl-nodes", Status: lock.CheckOK, Detail: "the servers allow TTL nodes: distlock acquire and --min-hold work"}
	case isUnimplemented(err):
		return lock.Check{Name: "ttl-nodes", Status: lock.CheckWarning,
			Detail: "the servers refuse TTL nodes: distlock acquire and --min-hold are refused (runs work)",
			Fix:    "set zookeeper.extendedTypesEnabled=true on every server (a Java system property) and restart them"}
	case errors.Is(err, zk.ErrNoAuth):
		return lock.Check{Name: "ttl-nodes", Status: lock.CheckProblem, Detail: "may not create nodes under " + b.root,
			Fix: "give this client create and delete rights on " + b.root}
	}
	return lock.CannotCheck("ttl-nodes", "check", err, "run doctor again once the ensemble answers")
}

// clockCheck reads the server's clock as the mtime of a write (of the
// prefix node's empty data), which has millisecond resolution.
func (b *Backend) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	return lock.ServerClockCheck(req.RequestContexts(ctx, 5*time.Second), req.TTL, "the mtime of a write", 500*time.Microsecond, func(ctx context.Context) (time.Time, error) {
		s, done, err := b.useAdmin(ctx)
		if err != nil {
			return time.Time{}, err
		}
		defer done()
		st, err := s.set(ctx, b.root, nil)
		if err != nil {
			return time.Time{}, err
		}
		return time.UnixMilli(st.Mtime).Add(500 * time.Microsecond), nil
	})
}

// headroomCheck compares, on each server, the sessions from this host
// with the server's maxClientCnxns (a limit per client IP), read with the
// conf and cons four-letter words; the worst server is reported. Servers
// that do not allow those words (4lw.commands.whitelist) cannot tell.
func (b *Backend) headroomCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	var checks []lock.Check
	for _, s := range b.servers {
		checks = append(checks, serverHeadroom(ctx, s, req.Timeout))
	}
	return lock.WorstCheck(checks)
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
	if why := cmp.Or(err, lerr); why != nil {
		return lock.CannotCheck("connections", "tell how many more connections "+server+" accepts from this host", why,
			"allow the conf and cons four-letter words (4lw.commands.whitelist in zoo.cfg) to have doctor check maxClientCnxns")
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
		port := strings.LastIndexByte(addr, ':') // an IPv6 address comes without brackets
		if ok && port > 0 && strings.Contains(line, "sid=") && net.ParseIP(addr[:port]).Equal(ip) {
			n++
		}
	}
	return n
}
