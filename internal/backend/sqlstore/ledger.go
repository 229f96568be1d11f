package sqlstore

import (
	"context"
	"slices"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// The run ledger (lock.Ledger): a row of distlock_ledger per entry, keyed
// by prefix, key and id, apart from the lease rows (a release, an expiry
// or a break deletes none of it). The table is created on first use, as
// the lease tables are: a deployment whose tables predate the ledger gets
// it at its first write (schema.sql creates only what is missing). Reads
// are plain reads on the server distlock is connected to, the primary,
// where the previous holder wrote its entry before it released.

var _ lock.Ledger = (*Store)(nil)

// PutEntry implements lock.Ledger: one upsert.
func (s *Store) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	if data == nil {
		data = []byte{} // an empty entry, not NULL (the column is NOT NULL)
	}
	err := s.withSchema(ctx, func() error {
		_, err := s.d.Driver.Exec(ctx, s.d.SQL.PutEntry, s.d.Prefix, key, id, data)
		return err
	})
	if err != nil {
		return s.Unavailable(err)
	}
	return nil
}

// Entries implements lock.Ledger: one query; with no table yet there are
// none.
func (s *Store) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.d.Driver.Query(ctx, s.d.SQL.Entries, []any{s.d.Prefix, key}, func(scan Row) error {
		var (
			id   string
			data []byte
		)
		if err := scan(&id, &data); err != nil {
			return err
		}
		out[id] = data
		return nil
	})
	if err := s.unlessUndefined(err); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteEntries implements lock.Ledger: one delete of every id that can
// name an entry, joined by commas (lock.ValidEntryID: an id holds none;
// the others cannot be there).
func (s *Store) DeleteEntries(ctx context.Context, key string, ids []string) error {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !lock.ValidEntryID(id) })
	if len(ids) == 0 {
		return nil
	}
	_, err := s.d.Driver.Exec(ctx, s.d.SQL.DeleteEntries, s.d.Prefix, key, strings.Join(ids, ","))
	return s.unlessUndefined(err)
}
