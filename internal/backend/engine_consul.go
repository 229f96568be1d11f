package backend

import "github.com/distlock/distlock/internal/backend/consul"

// consulEngine: the ACL token is the URL's password, else
// DISTLOCK_PASSWORD or --password-file, else CONSUL_HTTP_TOKEN (read by
// the official client).
var consulEngine = opens(Engine{
	Scheme: "consul", TLS: "consuls", Form: "consul://HOST:PORT,…[/PATH]", Name: "Consul",
	Guarantee: consul.Guarantee, Caps: every,
	Lists:  "one recursive KV read of the prefix",
	Checks: "leader and peers, Raft applied index moving, session TTL bounds for --ttl, clock offset (the answering server's Date header)",
}, consul.ParseURL, consul.New, func(c *consul.Config) settings {
	return settings{secret: &c.Token, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
})
