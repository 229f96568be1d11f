package cmd

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

// handleOptions are shared by extend and release: which held lock.
type handleOptions struct {
	Handle string
}

// add adds --handle to c.
func (o *handleOptions) add(c *cobra.Command) {
	c.Flags().StringVar(&o.Handle, "handle", "", "the DISTLOCK_HANDLE printed by acquire (default $DISTLOCK_HANDLE)")
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

// How acquire (and extend, when asked) print a handle: -o VALUE, or
// outJSON (output.go) for one JSON object.
const (
	// outShell: `export NAME=value` lines, for eval "$(...)" or a file
	// that a later shell sources; the variables reach the commands after.
	outShell = "shell"
	// outEnv: NAME=value lines, for >> "$GITHUB_ENV" or a dotenv file.
	outEnv = "env"
	// outNone: nothing on stdout (extend's default: the handle does not
	// change, and printing it would put it in CI logs).
	outNone = "none"
)

// handleJSON is what acquire and extend print with -o json. The handle is
// in it: -o json is asking for it.
type handleJSON struct {
	Key    string `json:"key"`
	Token  uint64 `json:"token"`
	TTLms  int64  `json:"ttl_ms"`
	Handle string `json:"handle"`
}

// printHandle writes h in format. The handle is base64url (A-Z a-z 0-9 - _)
// and the token digits: nothing a shell or a dotenv parser would read
// specially, so no quoting is needed.
func printHandle(w io.Writer, format string, h lock.Handle, ttl time.Duration) error {
	var err error
	switch format {
	case outShell:
		_, err = fmt.Fprintf(w, "export DISTLOCK_HANDLE=%s\nexport DISTLOCK_TOKEN=%d\n", h.Encode(), h.Token)
	case outEnv:
		_, err = fmt.Fprintf(w, "DISTLOCK_HANDLE=%s\nDISTLOCK_TOKEN=%d\n", h.Encode(), h.Token)
	case outJSON:
		err = writeJSON(w, handleJSON{Key: h.Key, Token: h.Token, TTLms: ttl.Milliseconds(), Handle: h.Encode()})
	}
	return err
}
