package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EndOfWait turns the end of an engine's wait for key into the error
// callers expect: a *BusyError naming the last holder seen (last may be
// nil) when the wait's deadline passed, the context's error when it was
// cancelled, else err itself. The engine client may report the deadline
// (as a socket timeout, say) a moment before ctx itself says so: a passed
// deadline counts.
func EndOfWait(ctx context.Context, key string, last *Holder, err error) error {
	dl, hasDL := ctx.Deadline()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), ctx.Err() == nil && hasDL && !time.Now().Before(dl):
		h := Holder{Key: key, ExpiresIn: -1}
		if last != nil {
			h = *last
		}
		return &BusyError{Holder: h}
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for %s: %w", key, ctx.Err())
	}
	return err
}

// SameHolder reports whether a and b describe the same holder at the same
// acquisition, so that waiting progress is told only of changes.
func SameHolder(a, b Holder) bool {
	return a.Key == b.Key && a.Owner == b.Owner && a.Token == b.Token &&
		a.Meta.Host == b.Meta.Host && a.Meta.PID == b.Meta.PID && a.AcquiredAt.Equal(b.AcquiredAt)
}

// LineCounter is implemented by an engine that keeps a line of waiters
// (its registry entry's Caps.Fair): status shows how many stand in
// key's line. A waiter that died keeps its place until the engine prunes
// it (its lease or place expires), so the count may include it for that
// long.
type LineCounter interface {
	QueueLen(ctx context.Context, key string) (int64, error)
}
