package backend

import "github.com/distlock/distlock/internal/backend/etcd"

// etcdEngine: the TLS files given by flags count where the URL names none.
var etcdEngine = opens(Engine{
	Scheme: "etcd", TLS: "etcds", Form: "etcd://HOST:PORT,…", Name: "etcd",
	Guarantee: etcd.Guarantee, Caps: every, Lists: "one range read",
	Checks: "cluster health and size, minimum lease TTL, auth, TLS, the leader's clock rate (takes 3-7 seconds)",
}, etcd.ParseURL, etcd.New, func(c *etcd.Config) settings {
	return settings{secret: &c.Password, caCert: &c.CACert, cert: &c.Cert, key: &c.Key, prefix: &c.Prefix, timeout: &c.DialTimeout}
})
