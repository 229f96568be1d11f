package backend

import (
	"cmp"
	"context"

	"github.com/distlock/distlock/internal/backend/etcd"
	"github.com/distlock/distlock/internal/lock"
)

var etcdEngine = Engine{
	Scheme: "etcd", TLS: "etcds", Form: "etcd://HOST:PORT,…", Name: "etcd",
	Guarantee: etcd.Guarantee,
	Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
	Lists:     "one range read",
	Checks:    "cluster health and size, minimum lease TTL, auth, TLS, the leader's clock rate (takes 3-7 seconds)",
	open:      openEtcd,
	kind:      (*etcd.Backend)(nil),
}

// openEtcd opens etcd://; the TLS files given by flags count where the
// URL names none.
func openEtcd(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := etcd.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Password = cmp.Or(cfg.Password, opts.Password)
	cfg.Prefix = opts.Prefix
	cfg.DialTimeout = opts.ConnectTimeout
	cfg.CACert = cmp.Or(cfg.CACert, opts.EtcdCACert)
	cfg.Cert = cmp.Or(cfg.Cert, opts.EtcdCert)
	cfg.Key = cmp.Or(cfg.Key, opts.EtcdKey)
	return etcd.New(ctx, cfg)
}
