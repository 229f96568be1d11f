package zookeeper

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestParseMaxCnxnsAndSessions(t *testing.T) {
	if n, err := parseMaxCnxns("clientPort=2181\nmaxClientCnxns=60\nminSessionTimeout=4000\n"); n != 60 || err != nil {
		t.Errorf("parseMaxCnxns = %d, %v", n, err)
	}
	if _, err := parseMaxCnxns("clientPort=2181\n"); err == nil {
		t.Error("no maxClientCnxns taken for a number")
	}
	cons := ` /127.0.0.1:45678[1](queued=0,recved=5,sent=5,sid=0x100,lop=PING)
 /127.0.0.1:45679[1](queued=0,recved=5,sent=5,sid=0x101,lop=PING)
 /10.0.0.2:45679[1](queued=0,recved=5,sent=5,sid=0x102,lop=PING)
 /127.0.0.1:45680[0](queued=0,recved=1,sent=0)
 /0:0:0:0:0:0:0:1:4000[1](queued=0,recved=1,sent=1,sid=0x103)
`
	if n := sessionsFrom(cons, net.ParseIP("127.0.0.1")); n != 2 {
		t.Errorf("sessions from 127.0.0.1 = %d, want 2 (not the one without a session)", n)
	}
	if n := sessionsFrom(cons, net.ParseIP("::1")); n != 1 {
		t.Errorf("sessions from ::1 = %d, want 1", n)
	}
}

// A server that does not allow conf cannot tell: a warning that says how
// to allow it.
func TestHeadroomNotWhitelisted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 4)
			_, _ = io.ReadFull(c, b)
			_, _ = io.WriteString(c, string(b)+" is not executed because it is not in the whitelist.\n")
			c.Close()
		}
	}()
	c := serverHeadroom(ctx(t), l.Addr().String(), time.Second)
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "cannot tell") || !strings.Contains(c.Fix, "4lw.commands.whitelist") {
		t.Fatalf("%+v", c)
	}
}

// TestDoctorConnectionHeadroom: doctor counts this host's sessions
// against maxClientCnxns and warns once fewer than a fifth are free.
func TestDoctorConnectionHeadroom(t *testing.T) {
	p := startLimited(t, 10)
	b := open(t, p.Addr(), "headroom")
	req := lock.DoctorRequest{TTL: 3 * time.Second, Timeout: 5 * time.Second}
	if c := b.headroomCheck(ctx(t), req); c.Status != lock.CheckOK || !strings.Contains(c.Detail, "1 of maxClientCnxns 10 in use: 9 free (90 %) (sessions from this host, 127.0.0.1, on "+p.Addr()) {
		t.Fatalf("one session of 10: %+v", c)
	}
	for range 8 {
		_ = open(t, p.Addr(), "headroom")
	}
	c := b.headroomCheck(ctx(t), req)
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "9 of maxClientCnxns") || !strings.Contains(c.Detail, "1 free") || !strings.Contains(c.Fix, "raise maxClientCnxns") {
		t.Fatalf("9 sessions of 10: %+v", c)
	}
}
