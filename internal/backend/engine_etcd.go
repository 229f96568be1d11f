package backend

import (
	"cmp"

	"github.com/distlock/distlock/internal/backend/etcd"
)

// etcdEngine: the TLS files given by flags count where the URL names none.
var etcdEngine = opens(Engine{
	Scheme: "etcd", TLS: "etcds", Form: "etcd://HOST:PORT,…", Name: "etcd",
	Guarantee: etcd.Guarantee, Caps: every,
	Lists:  "one range read",
	Checks: "cluster health and size, minimum lease TTL, auth, TLS, the leader's clock rate (takes 3-7 seconds)",
}, etcd.ParseURL, etcd.New, func(cfg *etcd.Config, opts Options) {
	cfg.Password = cmp.Or(cfg.Password, opts.Password)
	cfg.Prefix = opts.Prefix
	cfg.DialTimeout = opts.ConnectTimeout
	cfg.CACert = cmp.Or(cfg.CACert, opts.EtcdCACert)
	cfg.Cert = cmp.Or(cfg.Cert, opts.EtcdCert)
	cfg.Key = cmp.Or(cfg.Key, opts.EtcdKey)
})
