package cmd

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

// Factory is what the commands are given from outside: their standard
// streams and the way to open an engine. NewRootCommand gives the real
// ones; a test gives its own OpenEngine (an in-memory store,
// internal/lock/memstore) to run a command without a server.
type Factory struct {
	Stdin          *os.File
	Stdout, Stderr io.Writer
	// OpenEngine connects to the engine at url (backend.Open).
	OpenEngine func(ctx context.Context, url string, o backend.Options) (lock.Backend, error)
}

// NewRootCommand builds the whole command tree on the real engines. It
// holds no global state, so tests and the docs generator can build as
// many trees as they need.
func NewRootCommand(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	return NewRootCommandWith(Factory{Stdin: stdin, Stdout: stdout, Stderr: stderr, OpenEngine: backend.Open})
}

// Run runs args on the command tree built by f and returns the exit code,
// having written what went wrong to f.Stderr as distlock does.
func Run(ctx context.Context, f Factory, args []string) int {
	root := NewRootCommandWith(f)
	root.SetArgs(args)
	code, msg := codeFor(execute(ctx, root))
	if msg != "" {
		io.WriteString(f.Stderr, "distlock: "+msg+"\n")
	}
	return code
}
