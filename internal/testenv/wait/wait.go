// Package wait holds the tests' shared ways to wait: for a condition with a
// deadline (never a sleep as an assertion), and a context bounded by the test.
package wait

import (
	"context"
	"testing"
	"time"
)

// Fataler is what Until needs of a test: a *testing.T, or a testscript
// script (*testscript.TestScript) for the scenarios' harness commands.
type Fataler interface {
	Fatalf(format string, args ...any)
}

// Until polls cond every 5ms until it holds, failing t after timeout.
func Until(t Fataler, timeout time.Duration, what string, cond func() bool) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Context is a context that ends after d or with the test, whichever is first.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
