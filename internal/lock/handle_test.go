package lock

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestHandleRoundTrip(t *testing.T) {
	h := Handle{Key: "deploy/prod eu", Owner: "abc", Token: 1795297416679287, TTLms: 1800000, LeaseID: 42}
	s := h.Encode()
	if strings.ContainsAny(s, " '\"$`\\=+/") {
		t.Errorf("encoded handle %q is not shell-safe", s)
	}
	got, err := ParseHandle(s)
	if err != nil || got != h {
		t.Fatalf("ParseHandle(Encode(h)) = %+v, %v; want %+v", got, err, h)
	}
	for _, bad := range []string{"", "!!!", "e30", Handle{Key: "k"}.Encode()} {
		if _, err := ParseHandle(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseHandle(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// A handle says where its lock lives: CheckPlace passes it on that
// engine and prefix, refuses it (64) elsewhere naming where it was made,
// and passes a handle from an older build, which does not say.
func TestHandleCheckPlace(t *testing.T) {
	h := Handle{Key: "k", Owner: "o", Token: 7, TTLms: 1000}.Placed("redis://db1:6379/0", "ci")
	got, err := ParseHandle(h.Encode())
	if err != nil || got != h {
		t.Fatalf("ParseHandle(Encode(h)) = %+v, %v; want %+v", got, err, h)
	}
	if err := got.CheckPlace("redis://db1:6379/0", "ci", "release"); err != nil {
		t.Errorf("on its own engine and prefix: %v", err)
	}
	const want = "this handle was made on redis://db1:6379/0, prefix ci; run release with the same --backend and --prefix"
	for _, other := range [][2]string{{"redis://db1:6379/1", "ci"}, {"file:///run/locks", "ci"}, {"redis://db1:6379/0", "distlock"}} {
		err := got.CheckPlace(other[0], other[1], "release")
		if !errors.Is(err, ErrInvalid) || err.Error() != want {
			t.Errorf("CheckPlace(%q, %q) = %v; want ErrInvalid %q", other[0], other[1], err, want)
		}
	}
	old := Handle{Key: "k", Owner: "o", Token: 7, TTLms: 1000}
	if err := old.CheckPlace("file:///run/locks", "x", "extend"); err != nil {
		t.Errorf("a handle with no place (an older build's): %v", err)
	}
}

// A handle from an older build (no "e" or "p") still parses, and an older
// build reading a new handle ignores the fields it does not know
// (encoding/json's rule, which its ParseHandle kept): it accepts it as
// before, without the check.
func TestHandlePlaceCompatible(t *testing.T) {
	oldJSON := `{"k":"k","o":"o","t":7,"ttl":1000}`
	h, err := ParseHandle(base64.RawURLEncoding.EncodeToString([]byte(oldJSON)))
	if err != nil || h.Engine != "" || h.Prefix != "" {
		t.Fatalf("an older handle: %+v, %v", h, err)
	}
	type oldHandle struct {
		Key     string `json:"k"`
		Owner   string `json:"o"`
		Token   uint64 `json:"t"`
		TTLms   int64  `json:"ttl"`
		LeaseID int64  `json:"l,omitempty"`
	}
	b, _ := base64.RawURLEncoding.DecodeString(h.Placed("etcd://e1:2379", "ci").Encode())
	var o oldHandle
	if err := json.Unmarshal(b, &o); err != nil || o != (oldHandle{Key: "k", Owner: "o", Token: 7, TTLms: 1000}) {
		t.Fatalf("an older build's reading of a new handle: %+v, %v", o, err)
	}
	// what is shown in a message is printable text
	bad := Handle{Key: "k", Owner: "o", Token: 7}.Placed("redis://h\x1b[2J", "ci").Encode()
	if _, err := ParseHandle(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("a handle whose engine holds a control character: %v, want ErrInvalid", err)
	}
}

// One cluster named by other members is the same engine (an etcd
// endpoint, a cluster seed node, a sentinel, a ZooKeeper or Consul
// server): a handle made through one member is released through another.
// Members that share none, another path or parameters, another scheme,
// or Redlock's masters (they are the lock) are not.
func TestSameEngineByAMember(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"etcd://e1:2379,e2:2379,e3:2379", "etcd://e2:2379", true},
		{"redis+cluster://n1:7000,n2:7001", "redis+cluster://n2:7001,n3:7002", true},
		{"redis+sentinel://s1:26379,s2:26379/mymaster", "redis+sentinel://s2:26379/mymaster", true},
		{"zk://z1:2181,z2:2181/apps/ci", "zk://z2:2181/apps/ci", true},
		{"consul://c1:8500,c2:8500/kv/ci", "consul://c2:8500/kv/ci", true},
		{"etcd://e1:2379,e2:2379", "etcd://e3:2379", false},
		{"redis+sentinel://s1:26379/a", "redis+sentinel://s1:26379/b", false},
		{"redis+sentinel://s1:26379/a", "redis+sentinel://s1:26379/a?db=1", false},
		{"zk://z1:2181/apps", "zk://z1:2181/apps/ci", false},
		{"redlock://a:6379,b:6379,c:6379", "redlock://a:6379,b:6379", false},
		{"redis://db1:6379/0", "redis+cluster://db1:6379", false},
		{"file:///run/locks", "file:///run/other", false},
	} {
		if got := sameEngine(tc.a, tc.b); got != tc.same {
			t.Errorf("sameEngine(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		h := Handle{Key: "k", Owner: "o", Token: 7}.Placed(tc.a, "ci")
		if err := h.CheckPlace(tc.b, "ci", "release"); (err == nil) != tc.same {
			t.Errorf("CheckPlace(%q) of a handle made on %q = %v", tc.b, tc.a, err)
		}
	}
}
