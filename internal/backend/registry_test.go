package backend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// TestCapsMatchEngines: what the registry says an engine can do is what
// its type implements: a semaphore's holders by slot (lock.SlotInspector)
// and a line of waiters (lock.LineCounter).
func TestCapsMatchEngines(t *testing.T) {
	for _, e := range registry {
		_, slots := e.kind.(lock.SlotInspector)
		_, line := e.kind.(lock.LineCounter)
		if e.Caps.Semaphore != slots {
			t.Errorf("%s: Caps.Semaphore is %v, but its %T implements lock.SlotInspector: %v", e.Scheme, e.Caps.Semaphore, e.kind, slots)
		}
		if e.Caps.Fair != line {
			t.Errorf("%s: Caps.Fair is %v, but its %T implements lock.LineCounter (status's waiting): %v", e.Scheme, e.Caps.Fair, e.kind, line)
		}
	}
}

// TestRegistryEntriesComplete: every entry can be opened and shown, and
// every scheme names one engine.
func TestRegistryEntriesComplete(t *testing.T) {
	seen := map[string]string{}
	for _, e := range registry {
		if e.open == nil || e.kind == nil || e.Name == "" {
			t.Errorf("%s: an entry needs open, kind and Name", e.Scheme)
		}
		if !strings.HasPrefix(e.Form, e.Scheme+"://") {
			t.Errorf("%s: Form %q does not start with %s://", e.Scheme, e.Form, e.Scheme)
		}
		for _, s := range e.Schemes() {
			if other, dup := seen[strings.ToLower(s)]; dup {
				t.Errorf("scheme %s belongs to both %s and %s", s, other, e.Scheme)
			}
			seen[strings.ToLower(s)] = e.Scheme
			if got, ok := Lookup(strings.ToUpper(s)); !ok || got.Scheme != e.Scheme {
				t.Errorf("Lookup(%q) = %q, %v; want %s", strings.ToUpper(s), got.Scheme, ok, e.Scheme)
			}
		}
	}
	if registry[0].Scheme != "file" {
		t.Errorf("the default engine (file) must come first in help; first is %s", registry[0].Scheme)
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found an engine`)
	}
}

// TestOpenRefusesNonURLs: a backend that is not a URL, or whose scheme no
// engine has, is a usage mistake (64) in one line naming every engine's
// form, or every scheme, and never the password.
func TestOpenRefusesNonURLs(t *testing.T) {
	for _, tc := range []struct {
		url, want string
		lists     func(Engine) []string
	}{
		{"not a url", `backend "not a url" is not a URL: use `, func(e Engine) []string { return []string{e.Form} }},
		{"nope://u:s3cret@x", `backend scheme "nope" is not supported: use `, func(e Engine) []string {
			var out []string
			for _, s := range e.Schemes() {
				out = append(out, s+"://")
			}
			return out
		}},
	} {
		_, err := Open(context.Background(), tc.url, Options{})
		if !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("Open(%q) = %v, want lock.ErrInvalid", tc.url, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") {
			t.Errorf("Open(%q) = %q, want one line starting %q, without the password", tc.url, msg, tc.want)
		}
		for _, e := range Engines() {
			for _, s := range tc.lists(e) {
				if !strings.Contains(msg, s) {
					t.Errorf("Open(%q) = %q: %s is missing", tc.url, msg, s)
				}
			}
		}
	}
}

// TestOpenPicksEngineByScheme: each scheme reaches its own engine's
// parser (a URL only that parser refuses, in its own words).
func TestOpenPicksEngineByScheme(t *testing.T) {
	for url, want := range map[string]string{
		"file://host/dir":             "names the host",
		"REDIS://h:1/x":               "redis URL is malformed",
		"rediss+sentinel://h:1":       "redis+sentinel URL must name the master",
		"redis+cluster://h:1/2":       "redis+cluster URL has a path",
		"redlocks://h:1":              "Redlock needs at least 3",
		"etcds://h:1/p":               "etcd URL has a path",
		"zk://h:1?x":                  "zookeeper URL",
		"postgresql://h:1/d?bogus=%z": "postgres URL is malformed",
		"mysql://127.0.0.1:1/a/b":     "mysql URL needs one database",
	} {
		_, err := Open(context.Background(), url, Options{})
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want lock.ErrInvalid saying %q", url, err, want)
		}
	}
}
