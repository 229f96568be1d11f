package zookeeper

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// A ZooKeeper server that has as many connections from one client IP as
// its maxClientCnxns allows (60 by default) accepts each further
// connection and closes it at once, before it sends a byte; go-zookeeper
// then reconnects, again and again, and the session never comes. The
// client sees EOF (or a reset) as the first answer on the connection.

// closedAtOnce counts, on the session, a connection whose first read
// ended it without a byte.
func (c *sniffConn) closedAtOnce(n int, err error) {
	if c.off == 0 && n == 0 && isClosed(err) {
		c.s.refused.Add(1)
	}
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// noSession is the error of a dial that got no session in time: the
// server refusing connections from this host (maxClientCnxns), or why
// else, by probing each server.
func (b *Backend) noSession(s *session, err error) error {
	why, refused := probe(b.servers)
	if n := s.refused.Load(); n > 0 || refused {
		return &lock.UnavailableError{
			Msg: fmt.Sprintf("zookeeper at %s closed the connection at once, %d times: it refuses more connections from this host (its maxClientCnxns, 60 by default, counts every client on the host); raise maxClientCnxns in zoo.cfg on every server, or run fewer distlock processes on this host at once",
				b.desc, max(n, 1)),
			Err: err,
		}
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("zookeeper at %s gave no session in time (%s): check the address and that the ensemble is up and has a quorum, or raise --connect-timeout",
			b.desc, why),
		Err: err,
	}
}

// probe says why the servers gave no session: refused, closed at once
// (refused is then true), or silent.
func probe(servers []string) (why string, refused bool) {
	var out []string
	for _, s := range servers {
		c, err := net.DialTimeout("tcp", s, 300*time.Millisecond)
		if err != nil {
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Err != nil {
				err = oe.Err
			}
			out = append(out, s+": "+err.Error())
			continue
		}
		// A server waits for the client's connect request; one that
		// closes the connection first refuses this client.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if isClosed(err) {
			refused = true
			out = append(out, s+": closed the connection at once")
			continue
		}
		out = append(out, s+": accepts connections but did not answer")
	}
	return strings.Join(out, "; "), refused
}
