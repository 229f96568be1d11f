package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// List implements lock.Backend by scanning the lock directory. Each holder
// writes a sidecar naming its key: "<prefix>#<name>.json" for a mutex,
// "<prefix>#<name>#slot<i>.json" for a semaphore slot (semaphore.go). A
// sidecar counts only when it is one of the key's own files (not a copy or
// a foreign file), and the key is listed when Inspect says it is held right
// now, described as Inspect describes it (a semaphore: its oldest holder).
// A sidecar whose flock is free (and that records no unexpired hold) was
// left by a holder that died: the kernel dropped its flock, so it is stale
// and is not listed.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	ents, err := os.ReadDir(b.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot read lock directory %s: %v", b.dir, errors.Unwrap(err)), Err: err}
	}
	start := escapePrefix(b.prefix) + "#"
	var out []lock.Holder
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, start) || !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, ok, err := readMeta(filepath.Join(b.dir, name))
		if err != nil || !ok {
			continue // gone since the directory was read: released
		}
		if seen[m.Key] || !strings.HasPrefix(m.Key, keyPrefix) || lock.ValidateKey(m.Key) != nil || !ownSidecar(baseName(b.prefix, m.Key), name) {
			continue
		}
		seen[m.Key] = true
		h, held, err := b.Inspect(ctx, m.Key)
		if err != nil {
			return nil, err
		}
		if held && h.Key == m.Key {
			out = append(out, h)
		}
	}
	lock.SortHolders(out)
	return out, nil
}

// ownSidecar reports whether name is the mutex sidecar "<base>.json" or a
// slot sidecar "<base>#slot<i>.json" of the key whose base name is base.
func ownSidecar(base, name string) bool {
	rest, ok := strings.CutPrefix(name, base)
	if !ok {
		return false
	}
	if rest == ".json" {
		return true
	}
	digits, ok := strings.CutPrefix(strings.TrimSuffix(rest, ".json"), "#slot")
	if !ok || digits == "" || !strings.HasSuffix(rest, ".json") {
		return false
	}
	_, err := strconv.Atoi(digits)
	return err == nil
}
