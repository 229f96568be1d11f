package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/lease"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestTooLongTTLIsUsageError: a --ttl longer than etcd grants a lease for
// is a usage error (exit 64) saying the longest, when acquiring and when
// holding; the longest itself is granted.
func TestTooLongTTLIsUsageError(t *testing.T) {
	if maxLeaseTTL != lease.MaxLeaseTTL*time.Second {
		t.Fatalf("maxLeaseTTL %s, the server's is %d s", maxLeaseTTL, lease.MaxLeaseTTL)
	}
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)
		tooLong := maxLeaseTTL + time.Second
		_, err := lock.TryOnce(ctx, b, request("ttl:long", "alice", tooLong))
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "the longest is 2500000h0m0s (9000000000 seconds)") {
			t.Fatalf("acquire with --ttl %s: %v, want a usage error saying the longest", tooLong, err)
		}
		la, err := lock.TryOnce(ctx, b, request("ttl:long", "alice", maxLeaseTTL))
		if err != nil {
			t.Fatalf("acquire with the longest TTL: %v", err)
		}
		defer la.Release(ctx)
		if err := la.Hold(ctx, tooLong, lock.HoldHandle); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("hold for %s: %v, want a usage error", tooLong, err)
		}
	})
}
