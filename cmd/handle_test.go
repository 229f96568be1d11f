package cmd

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// The export and NAME=value lines are eval'd and sourced by shells and
// read by dotenv parsers: whatever the key and owner hold, they must be
// one unquoted word each.
func TestPrintHandleIsShellSafe(t *testing.T) {
	word := `[A-Za-z0-9_-]+`
	want := map[string]*regexp.Regexp{
		outShell: regexp.MustCompile(`^export DISTLOCK_HANDLE=` + word + `\nexport DISTLOCK_TOKEN=[0-9]+\n$`),
		outEnv:   regexp.MustCompile(`^DISTLOCK_HANDLE=` + word + `\nDISTLOCK_TOKEN=[0-9]+\n$`),
	}
	for _, key := range []string{"deploy:prod", `a'b"c$(touch x)` + "`id`;\\", "日本語 key", "a\x01b"} {
		h := lock.Handle{Key: key, Owner: "o'\"$x", Token: 1795580199058427, TTLms: 30000, LeaseID: 7}
		for format, re := range want {
			var b bytes.Buffer
			if err := printHandle(&b, format, h, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if !re.MatchString(b.String()) {
				t.Errorf("-o %s for key %q:\n%s", format, key, b.String())
			}
		}
		var b bytes.Buffer
		if err := printHandle(&b, outNone, h, time.Second); err != nil || b.Len() != 0 {
			t.Errorf("-o none printed %q, %v", b.String(), err)
		}
	}
}
