package backend

import (
	"context"

	"github.com/distlock/distlock/internal/backend/zookeeper"
	"github.com/distlock/distlock/internal/lock"
)

var zkEngine = Engine{
	Scheme: "zk", Form: "zk://HOST:PORT,…[/CHROOT]", Name: "ZooKeeper",
	Guarantee: zookeeper.Guarantee,
	Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
	Lists:     "listing the prefix's node",
	Checks:    "the session timeout granted for --ttl, TTL nodes allowed (holds), clock offset (the mtime of a write)",
	open:      openZooKeeper,
	kind:      (*zookeeper.Backend)(nil),
}

// openZooKeeper opens zk://; it takes no password.
func openZooKeeper(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := zookeeper.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Prefix = opts.Prefix
	cfg.ConnectTimeout = opts.ConnectTimeout
	return zookeeper.New(ctx, cfg)
}
