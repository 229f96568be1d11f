package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/distlock/distlock/internal/lock"
)

// The run ledger (lock.Ledger) of a key is a directory beside its lock
// files, "<base>#ledger", one file per entry, named by the entry's id.
// '#' keeps it apart from every key's own files (baseName escapes '#'),
// and List reads only regular ".json" files, so it never shows there. The
// ledger directory is used only when it is one (not a link: dirsafe.go).
// An entry is written to a dot-named temporary file (tmpName: no id
// starts with a dot) and renamed over its name: a reader sees the old entry or the new
// one, never a part. Entries are not fsync'd: a run's record is not worth
// a disk flush per run, and a machine that loses power loses its runs too.

// ledgerDir is the key's ledger directory.
func (p keyPaths) ledgerDir() string { return p.base + "#ledger" }

// PutEntry creates or replaces entry id of key's ledger.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	dir := b.keyPaths(key).ledgerDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return unavailable("create run ledger "+dir, err)
	}
	if err := checkRealDir(dir); err != nil {
		return unavailable("use run ledger "+dir, err)
	}
	tmp := tmpName(filepath.Join(dir, fmt.Sprintf(".put-%d", putSeq.Add(1))))
	if err := writeRenamed(filepath.Join(dir, id), tmp, data); err != nil {
		return unavailable("write run ledger "+dir, err)
	}
	return nil
}

// putSeq numbers this process's ledger writes: their temporary names.
var putSeq atomic.Uint64

// Entries reads every entry of key's ledger; an entry removed while it is
// read is left out.
func (b *Backend) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	dir := b.keyPaths(key).ledgerDir()
	out := map[string][]byte{}
	err := checkRealDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	var ents []os.DirEntry
	if err == nil {
		ents, err = os.ReadDir(dir)
	}
	if err != nil {
		return nil, unavailable("read run ledger "+dir, err)
	}
	for _, e := range ents {
		id := e.Name()
		if !e.Type().IsRegular() || !lock.ValidEntryID(id) { // never a dot-named temporary file
			continue
		}
		data, _, err := readFile(filepath.Join(dir, id))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, unavailable("read run ledger "+dir, err)
		}
		out[id] = data
	}
	return out, nil
}

// DeleteEntries removes ids from key's ledger.
func (b *Backend) DeleteEntries(ctx context.Context, key string, ids []string) error {
	dir := b.keyPaths(key).ledgerDir()
	if err := checkRealDir(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return unavailable("delete in run ledger "+dir, err)
	}
	for _, id := range ids {
		if !lock.ValidEntryID(id) {
			continue // never a name outside the ledger's own entries
		}
		if err := os.Remove(filepath.Join(dir, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return unavailable("delete in run ledger "+dir, err)
		}
	}
	return nil
}
