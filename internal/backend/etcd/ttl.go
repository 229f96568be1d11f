package etcd

import (
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/distlock/distlock/internal/lock"
)

// maxLeaseTTL is the longest lease etcd grants (the server's
// lease.MaxLeaseTTL, 9,000,000,000 seconds); it answers a longer one with
// "etcdserver: too large lease TTL".
const maxLeaseTTL = 9_000_000_000 * time.Second

// ttlRefused is the usage error (exit 64) for a lease TTL etcd refused as
// too long, saying the longest it grants, as Consul's ttlError is for a
// session TTL; nil for any other error.
func ttlRefused(err error) error {
	if !errors.Is(err, rpctypes.ErrLeaseTTLTooLarge) {
		return nil
	}
	return lock.Invalidf("--ttl is longer than any lease etcd grants: the longest is %s (%d seconds); use a shorter --ttl",
		maxLeaseTTL, int64(maxLeaseTTL/time.Second))
}
