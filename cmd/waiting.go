package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/distlock/distlock/internal/lock"
)

// status's "waiting:" line: how many contenders stand in a key's line, on
// an engine that keeps one (lock.LineCounter).

// waitingJSON is the waiting field of status -o json: the count, or null
// when the engine keeps no line or it could not be read.
type waitingJSON struct {
	Waiting *int64 `json:"waiting"`
}

// waitingOf asks b how many wait in key's line, bounded by
// --connect-timeout; nil when b keeps no line. Like the run ledger, a
// count that cannot be read costs the line, with a warning, not the
// answer.
func (g *globalOptions) waitingOf(ctx context.Context, b lock.Backend, key string) *int64 {
	lc, ok := b.(lock.LineCounter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	defer cancel()
	n, err := lc.QueueLen(ctx, key)
	if err != nil {
		g.logger().Warn("cannot count the waiters in line; the waiting line is not shown", "key", key, "error", err)
		return nil
	}
	return &n
}

// printWaiting prints "waiting: N in line" under a key's status when
// anyone waits.
func printWaiting(w io.Writer, n *int64) {
	if n != nil && *n > 0 {
		fmt.Fprintf(w, "  %-13s %d in line\n", "waiting:", *n)
	}
}
