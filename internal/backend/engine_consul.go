package backend

import (
	"cmp"
	"context"

	"github.com/distlock/distlock/internal/backend/consul"
	"github.com/distlock/distlock/internal/lock"
)

var consulEngine = Engine{
	Scheme: "consul", TLS: "consuls", Form: "consul://HOST:PORT,…[/PATH]", Name: "Consul",
	Guarantee: consul.Guarantee,
	Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
	Lists:     "one recursive KV read of the prefix",
	Checks:    "leader and peers, Raft applied index moving, session TTL bounds for --ttl, clock offset (the leader's Date header)",
	open:      openConsul,
	kind:      (*consul.Backend)(nil),
}

// openConsul opens consul://; the ACL token is the URL's password, else
// DISTLOCK_PASSWORD or --password-file, else CONSUL_HTTP_TOKEN (read by
// the official client).
func openConsul(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := consul.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Token = cmp.Or(cfg.Token, opts.Password)
	cfg.Prefix = opts.Prefix
	cfg.ConnectTimeout = opts.ConnectTimeout
	return consul.New(ctx, cfg)
}
