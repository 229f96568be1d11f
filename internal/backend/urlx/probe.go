package urlx

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Probe dials every address at once, each within timeout (with a TLS
// handshake when tlsCfg is set, for the address's host unless tlsCfg names
// a server), to say why a client got nowhere: clients often report only a
// timeout. A failed dial is "addr: why", without the dial's noise ("dial
// tcp 1.2.3.4:5: connect:"); after, when not nil, judges a connection that
// was made ("" when it says nothing). Probe closes the connections and
// returns the reasons joined by "; ", "" when there are none.
func Probe(addrs []string, timeout time.Duration, tlsCfg *tls.Config, after func(net.Conn) string) string {
	reasons := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			c, err := dial(addr, timeout, tlsCfg)
			if err != nil {
				reasons[i] = addr + ": " + shortNetError(err)
				return
			}
			defer c.Close()
			if after != nil {
				if why := after(c); why != "" {
					reasons[i] = addr + ": " + why
				}
			}
		})
	}
	wg.Wait()
	return strings.Join(slices.DeleteFunc(reasons, func(r string) bool { return r == "" }), "; ")
}

func dial(addr string, timeout time.Duration, tlsCfg *tls.Config) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if tlsCfg == nil {
		return d.Dial("tcp", addr)
	}
	tc := tlsCfg.Clone()
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	return tls.DialWithDialer(d, "tcp", addr, tc)
}

// shortNetError drops the "dial tcp 1.2.3.4:5->" and "connect:" noise from
// a net error.
func shortNetError(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return err.Error()
}
