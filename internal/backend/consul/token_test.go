package consul

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// The token is max(the key's counter + 1, the wall clock in µs): with the
// counter far ahead of the clock a grant gives counter + 1; with no
// counter (a key never used, or Consul lost its data) the clock. A counter
// that holds no token is refused with one line naming its key, as on etcd
// and ZooKeeper (exit 69), and left as it is: read as 0, the token would
// follow the clock and go back below the last one.
func TestTokenCounter(t *testing.T) {
	b := open(t, agent(t).Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv := b.clients[0].KV()
	setCounter := func(v string) {
		t.Helper()
		if _, err := kv.Put(&api.KVPair{Key: b.tokenKey("c"), Value: []byte(v)}, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	ahead := lock.ClockMicros(time.Now().Add(24 * time.Hour))
	setCounter(strconv.FormatUint(ahead, 10))
	l, err := lock.TryOnce(ctx, b, request("c", "alice", 3*time.Second))
	if err != nil || l.Token() != ahead+1 {
		t.Fatalf("try with the counter ahead of the clock: %v, %v; want token %d", l, err, ahead+1)
	}
	_ = l.Release(ctx)

	for _, bad := range []string{"garbage", "", "-5", "12.5", " 7", "99999999999999999999999", strings.Repeat("x", 60)} {
		setCounter(bad)
		for _, limit := range []int{1, 2} {
			req := request("c", "bob", 3*time.Second)
			req.Limit = limit
			l, err := lock.TryOnce(ctx, b, req)
			if l != nil {
				_ = l.Release(ctx)
				t.Fatalf("counter %q, limit %d: took the lock with token %d; want it refused", bad, limit, l.Token())
			}
			var ue *lock.UnavailableError
			msg := lock.FirstLine(err)
			if !errors.As(err, &ue) || ue.Refused || msg != err.Error() ||
				!strings.Contains(msg, "the token counter of c (Consul key "+b.tokenKey("c")+") holds ") ||
				!strings.HasSuffix(msg, "not a token: delete that key (the next token then follows the clock)") {
				t.Fatalf("counter %q, limit %d: %v (%T); want one line naming the counter and what to do (a failure, not a refusal)", bad, limit, err, err)
			}
		}
		got, _, err := kv.Get(b.tokenKey("c"), (&api.QueryOptions{}).WithContext(ctx))
		if err != nil || got == nil || string(got.Value) != bad {
			t.Fatalf("counter after the refused tries: %+v, %v; want %q left as it was", got, err, bad)
		}
	}

	if _, err := kv.Delete(b.tokenKey("c"), (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	before := lock.ClockMicros(time.Now())
	l, err = lock.TryOnce(ctx, b, request("c", "carol", 3*time.Second))
	if err != nil || l.Token() < before || l.Token() > lock.ClockMicros(time.Now()) {
		t.Fatalf("try with no counter: %v, %v; want the clock at the grant (%d…)", l, err, before)
	}
	_ = l.Release(ctx)
}
