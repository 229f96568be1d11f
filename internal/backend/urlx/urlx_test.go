package urlx

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// Specs shaped like the engines' (each engine's own tests hold its
// exact one).
var (
	// like etcd: default ports, bare IPv6, plain hosts, no path, TLS files.
	etcdLike = Spec{Name: "e", Scheme: "e", TLSScheme: "es", Form: "e://h:p", Port: "2379", TLSPort: "2380",
		BareIPv6: true, PlainHosts: true, PathNote: "use --prefix", Params: []string{"cacert", "key"}}
	// like ZooKeeper: default port, a chroot, nothing else.
	zkLike = Spec{Name: "z", Scheme: "z", Form: "z://h:p/chroot", Port: "2181", NoUser: true, NoFragment: true, Path: Nodes}
	// like Redis Sentinel: every host names its port, a master's name.
	sentinelLike = Spec{Name: "s", Scheme: "s", TLSScheme: "ss", Form: "s://h:p/M", Path: Name, PathNote: "the master",
		Params: []string{"db", "tls"}, Refused: map[string]string{"wait": "no wait here"}}
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		raw  string
		want URL
	}{
		{etcdLike, "e://h", URL{Scheme: "e", Hosts: []string{"h:2379"}}},
		{etcdLike, "ES://h,h2:1", URL{Scheme: "es", TLS: true, Hosts: []string{"h:2380", "h2:1"}}},
		{etcdLike, "e://::1,fe80::1,[::2],[::3]:4,10.0.0.1", URL{Scheme: "e", Hosts: []string{"[::1]:2379", "[fe80::1]:2379", "[::2]:2379", "[::3]:4", "10.0.0.1:2379"}}},
		{etcdLike, "e://u:p%2F%3F%23%40w:x@h:1/", URL{Scheme: "e", User: "u", Password: "p/?#@w:x", Hosts: []string{"h:1"}}},
		{etcdLike, "e://:pw@h?cacert=/c&key=k#frag", URL{Scheme: "e", Password: "pw", Hosts: []string{"h:2379"}, Query: map[string][]string{"cacert": {"/c"}, "key": {"k"}}}},
		{zkLike, "z://a,b:2,[fe80::1%eth0]:3/apps/ci/", URL{Scheme: "z", Hosts: []string{"a:2181", "b:2", "[fe80::1%eth0]:3"}, Path: "apps/ci"}},
		{zkLike, "z://a/", URL{Scheme: "z", Hosts: []string{"a:2181"}}},
		{zkLike, "z://[fe80::1%eth0]", URL{Scheme: "z", Hosts: []string{"[fe80::1%eth0]:2181"}}},
		{sentinelLike, "ss://u:pw@h:1,[::1]:2/mymaster/?db=2&db=3", URL{Scheme: "ss", TLS: true, User: "u", Password: "pw",
			Hosts: []string{"h:1", "[::1]:2"}, Path: "mymaster", Query: map[string][]string{"db": {"2", "3"}}}},
	} {
		got, err := Parse(tc.raw, tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.raw, err)
			continue
		}
		if tc.want.Query == nil {
			tc.want.Query = map[string][]string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

// TestParseRefuses: each refusal is one line of lock.ErrInvalid naming
// the engine's URL, saying what is wrong, never holding the password.
func TestParseRefuses(t *testing.T) {
	const pw = "Sekr3tpw"
	for _, tc := range []struct {
		spec      Spec
		raw, want string
	}{
		{etcdLike, "h:1", "e URL has no scheme"},
		{etcdLike, "x://h", "e URL scheme is not e:// or es://"},
		{zkLike, "x://h", "z URL scheme is not z://"},
		{etcdLike, "e://", "names no host"},
		{etcdLike, "e://u:" + pw + "@", "names no host"},
		{etcdLike, "e://a,,b", "empty host in its host list"},
		{etcdLike, "e://u:" + pw, `the host "u" has no valid port`}, // "@host" forgotten
		{etcdLike, "e://u:" + pw + ":x", "not host:port"},
		{etcdLike, "e://u:" + pw + "/x@h", "percent-encode"},
		{etcdLike, "e://u:" + pw + "%zz@h", "password is not valid percent-encoding"},
		{etcdLike, "e://u%zz:" + pw + "@h", "user name is not valid percent-encoding"},
		{etcdLike, "e://h:0", "invalid port"},
		{etcdLike, "e://h:65536", "invalid port"},
		{etcdLike, "e://:1", "not host:port"},
		{etcdLike, "e://[::1", "not host:port"},
		{etcdLike, "e://[a:b]", "not host:port"},
		{etcdLike, "e://[::1]x", "not host:port"},
		{etcdLike, "e://ho st", `invalid host name "ho st"`},
		{etcdLike, "e://[fe80::1%25eth0]:1", "invalid host name"},
		{etcdLike, "e://h/p", "has a path: it takes none (use --prefix)"},
		{etcdLike, "e://h?x=1&cacert=c", `unknown parameter "x": it takes no parameters but cacert, key`},
		{etcdLike, "e://u:" + pw + "@h?cacert=%zz", "query is malformed"},
		{etcdLike, "e://h#f?cacert=c", "put the query before any fragment"},
		{zkLike, "z://::1", "not host:port"},
		{zkLike, "z://u:" + pw + "@h", "takes no user name or password"},
		{zkLike, "z://h/a@b", "takes no user name or password"},
		{zkLike, "z://h?", "takes no query"},
		{zkLike, "z://h/a#b", "takes no #fragment"},
		{sentinelLike, "s://h", `"h" has no port`},
		{sentinelLike, "s://u:" + pw + "@h:1,h:x/m", `the host "h" has no valid port`},
		{sentinelLike, "s://h:1", "must name the master after the hosts"},
		{sentinelLike, "s://h:1/a/b", "must name the master after the hosts"},
		{sentinelLike, "s://h:1/m?wait=1", "s URL: no wait here"},
	} {
		_, err := Parse(tc.raw, tc.spec)
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want lock.ErrInvalid", tc.raw, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.spec.Name+" URL") ||
			strings.Contains(msg, pw) || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): %q, want one line naming the %s URL, saying %q, without the password", tc.raw, msg, tc.spec.Name, tc.want)
		}
	}
}
