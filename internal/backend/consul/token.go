package consul

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// lastToken is the last token of key in its counter c as read (0 when the
// key never had a token). A counter that holds no token (corrupted,
// written by hand or by something else) ends the take with one line, as on
// etcd and ZooKeeper: read as 0, the next token would follow the clock
// alone and go back when the clock is behind the last token.
func (b *Backend) lastToken(key string, c api.KVPair) (uint64, error) {
	if c.Key == "" {
		return 0, nil
	}
	t, err := strconv.ParseUint(string(c.Value), 10, 64)
	if err != nil {
		v := c.Value
		if len(v) > 40 {
			v = append(v[:40:40], "…"...)
		}
		// (not opError: its refusal test reads the text, here the counter's)
		return 0, &lock.UnavailableError{Msg: fmt.Sprintf("consul at %s: the token counter of %s (Consul key %s) holds %q, not a token: delete that key (the next token then follows the clock)", strings.Join(b.addrs, ","), key, c.Key, v)}
	}
	return t, nil
}
