package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestConfirm(t *testing.T) {
	now := time.Now()
	h := lock.Holder{
		Key: "job:daily", Token: 17, Meta: lock.Meta{Host: "host-b", PID: 4123, User: "deploy", Command: "./job.sh", Note: "release\x1b[2J 1.4"},
		AcquiredAt: now.Add(-2 * time.Minute), TTL: 30 * time.Second, ExpiresIn: 28 * time.Second,
	}
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"y\n", true}, {"yes\n", true}, {"  YES \n", true}, {"Y", true},
		{"n\n", false}, {"\n", false}, {"", false}, {"yep\n", false}, {"no\n", false},
	} {
		var out bytes.Buffer
		if got := confirm(strings.NewReader(tc.in), &out, "job:daily", []lock.Holder{h}, now); got != tc.want {
			t.Errorf("answer %q: confirm = %v, want %v", tc.in, got, tc.want)
		}
		s := out.String()
		for _, want := range []string{
			"job:daily is held by host-b pid 4123 (token 17) for 2m0s, expires in 28s\n",
			"  user:      deploy\n", "  command:   ./job.sh\n",
			"Break it? Its command will be stopped. [y/N] ",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("prompt lacks %q:\n%s", want, s)
			}
		}
		// a note cannot drive the terminal
		if strings.Contains(s, "\x1b") || !strings.Contains(s, `release\x1b[2J 1.4`) {
			t.Errorf("note not escaped:\n%q", s)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"ключ 1.4":     "ключ 1.4",
		"a\nb":         `a\nb`,
		"\x1b[31mred":  `\x1b[31mred`,
		"tab\there":    `tab\there`,
		`quote"slash\`: `quote"slash\`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpiring(t *testing.T) {
	for _, tc := range []struct {
		ttl, left time.Duration
		want      bool
	}{
		{30 * time.Second, 28 * time.Second, false},
		{30 * time.Second, 20 * time.Second, false},
		{30 * time.Second, 9 * time.Second, true},
		{30 * time.Second, -1, false}, // unknown
		{0, time.Second, false},       // TTL unknown
	} {
		if got := expiring(lock.Holder{TTL: tc.ttl, ExpiresIn: tc.left}); got != tc.want {
			t.Errorf("ttl %s left %s: expiring = %v, want %v", tc.ttl, tc.left, got, tc.want)
		}
	}
}

func TestConfirmShowsEverySlot(t *testing.T) {
	now := time.Now()
	hs := []lock.Holder{
		{Key: "pool", Token: 17, Limit: 3, Slot: 0, Meta: lock.Meta{Host: "a", PID: 1}, ExpiresIn: -1},
		{Key: "pool", Token: 18, Limit: 3, Slot: 2, Meta: lock.Meta{Host: "b", PID: 2}, ExpiresIn: -1},
	}
	var out bytes.Buffer
	if !confirm(strings.NewReader("yes\n"), &out, "pool", hs, now) {
		t.Fatal("yes was not a yes")
	}
	for _, want := range []string{
		"pool is a semaphore with 2/3 held; to break:\n",
		"  slot 0: held by a pid 1 (token 17)\n",
		"  slot 2: held by b pid 2 (token 18)\n",
		"Break them? Their commands will be stopped. [y/N] ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prompt lacks %q:\n%s", want, out.String())
		}
	}
}
