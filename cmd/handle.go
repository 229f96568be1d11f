package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/distlock/distlock/internal/lock"
)

// handleOptions are shared by extend and release: which held lock.
type handleOptions struct {
	Handle string
}

// handle reads --handle, else DISTLOCK_HANDLE.
func (o *handleOptions) handle() (lock.Handle, error) {
	s := o.Handle
	if s == "" {
		s = os.Getenv("DISTLOCK_HANDLE")
	}
	if s == "" {
		return lock.Handle{}, lock.Invalidf("no handle: pass --handle or set DISTLOCK_HANDLE to what distlock acquire printed")
	}
	return lock.ParseHandle(s)
}

// resume opens the engine and takes up the lease named by the handle. A
// handle that no longer holds its lock is a lost lock: exit 76.
func (g *globalOptions) resume(ctx context.Context, h lock.Handle) (lock.Backend, lock.Lease, error) {
	b, err := g.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, ok := b.(lock.Resumer)
	if !ok {
		b.Close()
		return nil, nil, lock.Invalidf("this engine cannot hold locks across processes")
	}
	rctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	defer cancel()
	l, err := r.Resume(rctx, h)
	if errors.Is(err, lock.ErrNotHeld) {
		b.Close()
		return nil, nil, staleHandle(h)
	}
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, l, nil
}

// printHandle writes the lines for `>> "$GITHUB_ENV"` or eval: no quoting
// needed, no secrets.
func printHandle(w io.Writer, h lock.Handle) {
	fmt.Fprintf(w, "DISTLOCK_HANDLE=%s\nDISTLOCK_TOKEN=%d\n", h.Encode(), h.Token)
}
