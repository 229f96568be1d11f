package backend

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/backend/consul"
	"github.com/distlock/distlock/internal/backend/etcd"
	"github.com/distlock/distlock/internal/backend/mysql"
	"github.com/distlock/distlock/internal/backend/postgres"
	"github.com/distlock/distlock/internal/backend/redis"
	"github.com/distlock/distlock/internal/backend/zookeeper"
)

// parsers are every engine's URL parser, by the engine's Scheme: each
// refuses a URL without connecting anywhere.
var parsers = map[string]func(string) error{
	"file":           func(s string) error { _, err := fileDir(s); return err },
	"redis":          func(s string) error { _, err := redis.ParseURL(s); return err },
	"redis+sentinel": func(s string) error { _, err := redis.ParseSentinelURL(s); return err },
	"redis+cluster":  func(s string) error { _, err := redis.ParseClusterURL(s); return err },
	"redlock":        func(s string) error { _, err := redis.ParseRedlockURL(s); return err },
	"etcd":           func(s string) error { _, err := etcd.ParseURL(s); return err },
	"zk":             func(s string) error { _, err := zookeeper.ParseURL(s); return err },
	"consul":         func(s string) error { _, err := consul.ParseURL(s); return err },
	"postgres":       func(s string) error { _, err := postgres.ParseURL(s); return err },
	"mysql":          func(s string) error { _, err := mysql.ParseURL(s); return err },
}

// TestURLErrorsNeverHoldUserinfo: whatever the scheme, a user name or
// password holding an unescaped '/', '?', '#', '@', ':' or a bad escape,
// where a user wrote it or with "@host" forgotten, never shows in the
// error: no piece of it between those characters does.
func TestURLErrorsNeverHoldUserinfo(t *testing.T) {
	pieces := []string{"pwA1", "pwB2", "pwC3", "pwD4", "pwE5", "pwF6"}
	secrets := []string{"pwA1/pwB2", "pwA1?pwB2", "pwA1#pwB2", "pwA1@pwB2", "pwA1:pwB2",
		"pwA1/pwB2?pwC3#pwD4@pwE5:pwF6", "pwA1%zzpwB2", "123/pwB2", "12#pwB2", "1?pwB2"}
	// Where the secret goes: S is replaced by it, H by the hosts, P by a path.
	places := []string{"S@HP", "S:pw@HP", "u:S@HP", ":S@HP", "S:S@HP"}
	// With "@host" forgotten, user:password reads as host:port: only a
	// password without '/', '?', '#' and '@' can be told from a path.
	forgotten := []string{"pwA1", "pwA1:pwB2", "pwA1%zzpwB2"}
	hosts := []string{"127.0.0.1:1", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}
	paths := []string{"", "/0", "/db?sslmode=disable", "/m?tls=true"}
	n := 0
	for _, e := range Engines() {
		parse, ok := parsers[e.Scheme]
		if !ok {
			t.Errorf("engine %s: no parser in this test's table", e.Scheme)
			continue
		}
		for _, scheme := range e.Schemes() {
			var urls []string
			for _, h := range hosts {
				for _, p := range paths {
					for _, place := range places {
						for _, s := range secrets {
							urls = append(urls, scheme+"://"+strings.NewReplacer("S", s, "H", h, "P", p).Replace(place))
						}
					}
				}
			}
			for _, s := range forgotten {
				urls = append(urls, scheme+"://u:"+s, scheme+"://u:"+s+"/0", scheme+"://:"+s)
			}
			for _, raw := range urls {
				err := parse(raw)
				if err == nil {
					continue
				}
				n++
				for _, p := range pieces {
					if strings.Contains(err.Error(), p) {
						t.Errorf("%s: %v", raw, err)
						break
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no URL was refused: the test tests nothing")
	}
}
