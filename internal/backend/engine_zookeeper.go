package backend

import "github.com/distlock/distlock/internal/backend/zookeeper"

// zkEngine takes no password.
var zkEngine = opens(Engine{
	Scheme: "zk", Form: "zk://HOST:PORT,…[/CHROOT]", Name: "ZooKeeper",
	Guarantee: zookeeper.Guarantee, Caps: every,
	Lists:  "listing the prefix's node",
	Checks: "the session timeout granted for --ttl, TTL nodes allowed (holds), clock offset (the mtime of a write)",
}, zookeeper.ParseURL, zookeeper.New, func(c *zookeeper.Config) settings {
	return settings{prefix: &c.Prefix, timeout: &c.ConnectTimeout}
})
