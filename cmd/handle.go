package cmd

import (
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

// printHandle writes the lines for `>> "$GITHUB_ENV"` or eval: no quoting
// needed, no secrets.
func printHandle(w io.Writer, h lock.Handle) {
	fmt.Fprintf(w, "DISTLOCK_HANDLE=%s\nDISTLOCK_TOKEN=%d\n", h.Encode(), h.Token)
}
