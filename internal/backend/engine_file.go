package backend

import (
	"context"
	"net/url"
	"strings"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
)

// fileEngine is a lock directory on this machine, the default engine.
var fileEngine = Engine{
	Scheme: "file", Form: "file:///DIR", Name: "a local file directory",
	Guarantee: file.Guarantee,
	Caps:      Caps{Semaphore: true, Holds: true, Doctor: true},
	Lists:     "reading the lock directory (a lock whose holder died is not listed)",
	Checks:    "local filesystem (not NFS/CIFS), writable (a directory that cannot be created is a problem, not exit 69), flock(2) works",
	open:      openFile,
	kind:      (*file.Backend)(nil),
}

// openFile opens file:///DIR (file:// alone: the default directory).
func openFile(_ context.Context, rawURL string, opts Options) (lock.Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, lock.Invalidf("backend URL %q is malformed: %v", Redact(rawURL), cleanURLError(err))
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return nil, lock.Invalidf("backend URL %q names the host %q, not a directory: use file:///abs/path (three slashes) for a lock directory", Redact(rawURL), u.Host)
	}
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		return nil, lock.Invalidf("backend URL %q is a relative path: use file:///abs/path (three slashes) for a lock directory", Redact(rawURL))
	}
	open := file.Open
	if opts.Doctor {
		open = func(dir, prefix string) (*file.Backend, error) { return file.OpenForDoctor(dir, prefix), nil }
	}
	b, err := open(u.Path, opts.Prefix)
	if err != nil {
		return nil, err
	}
	b.SetLogger(opts.Log)
	return b, nil
}

// cleanURLError drops the URL from url.Parse's error, since it may hold a password.
func cleanURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
