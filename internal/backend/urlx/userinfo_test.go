package urlx

import (
	"errors"
	"net/url"
	"testing"
)

func TestAmbiguous(t *testing.T) {
	for _, tc := range []struct {
		r    Reader
		raw  string
		want bool
	}{
		{NetURL, "r://u:pw@h:1/0", false},
		{NetURL, "r://u:p@w@h:1/0", false}, // net/url ends it at the last '@'
		{NetURL, "r://h:1/0", false},
		{NetURL, "r://u:p/w@h:1", true},
		{NetURL, "r://u:p?w@h:1", true},
		{NetURL, "r://u:p#w@h:1", true},
		{NetURL, "r://h:1/0?name=a@b", false},         // a query value's '@'
		{NetURL, "r://h:1,g:2/0?a=1&name=a@b", false}, // the same, several hosts
		{NetURL, "r://u:p/0?name=a@b", true},          // u:p is no host:port
		{NetURL, "r://:12/x/y@h:1", true},             // the '@' is in the path
		{NetURL, "r://:1?pw@h:1", true},               // a '?' that is no query's
		{NetURL, "file://localhost/run/x@1", false},   // file's own host
		{LibPQ, "p://db/app?user=svc@tenant", false},  // libpq: the query's
		{LibPQ, "p://db:5432/app?sslrootcert=/a@b/c", false},
		{NetURL, "no scheme@h", false},
		{NetURL, "file:///tmp/a@b", false},              // no authority: the path's '@'
		{LibPQ, "p:///db?host=/run/pg&user=a@b", false}, // a socket: no authority either
		{LibPQ, "p://u:p?w#x@h/db", false},              // libpq: only '/' ends it
		{LibPQ, "p://u:p/w@h/db", true},
		{LibPQ, "p://u:p@w@h/db", true}, // libpq ends it at the first '@'
		{LibPQ, "p://u:pw@h/db?user=a@b", false},
	} {
		if got := tc.r.Ambiguous(tc.raw); got != tc.want {
			t.Errorf("%+v.Ambiguous(%q) = %v, want %v", tc.r, tc.raw, got, tc.want)
		}
	}
}

func TestRedacted(t *testing.T) {
	for _, tc := range []struct {
		r        Reader
		raw, out string
	}{
		{NetURL, "r://u:pw@h:1/0?x=1", "r://xxxxx:xxxxx@h:1/0?x=1"},
		{NetURL, "r://u@h:1,[::1]:2", "r://xxxxx@h:1,[::1]:2"},
		{NetURL, "r://u:p@w@h:1", "r://xxxxx:xxxxx@h:1"},
		{LibPQ, "p://u:p?w@h/db", "p://xxxxx:xxxxx@h/db"},
		{NetURL, "r://u:s3cret/0", "r://u:xxxxx/0"}, // "@host" forgotten
		{NetURL, "r://h:1,[::1]:pw,h:x:y", "r://h:1,[::1]:xxxxx,h:xxxxx"},
		{NetURL, "file:///var/lock", "file:///var/lock"},
	} {
		if got := tc.r.Redacted(tc.raw); got != tc.out {
			t.Errorf("%+v.Redacted(%q) = %q, want %q", tc.r, tc.raw, got, tc.out)
		}
	}
}

// TestReword: a parser's error is shown as it reads the URL redacted, or
// Unencoded when the user-info is what it refused.
func TestReword(t *testing.T) {
	parse := func(s string) error { _, err := url.Parse(s); return err }
	for raw, want := range map[string]string{
		"r://u:s3cret@h:x":    `invalid port ":xxxxx" after host`,
		"r://u:s3cret":        `invalid port ":xxxxx" after host`,
		"r://u:s3%zzcret@h":   Unencoded,
		"r://u:s3/cret@h:1":   Unencoded,
		"r://u:s3cret@h%zz:1": `invalid URL escape "%zz"`,
	} {
		if got := NetURL.Reword(raw, parse); got != want {
			t.Errorf("Reword(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := NetURL.Reword("r://u:s3cret@h", func(string) error { return errors.New("a\nb") }); got != "a" {
		t.Errorf("Reword kept %q, want the first line", got)
	}
}
