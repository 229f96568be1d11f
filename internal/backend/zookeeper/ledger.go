package zookeeper

// The run ledger on ZooKeeper (lock.Ledger).
//
//	<chroot>/<prefix>/<escaped KEY>#ledger          the key's ledger (a container node)
//	<chroot>/<prefix>/<escaped KEY>#ledger/<id>     one entry (persistent; data: its bytes)
//
// Next to the key's node and its counter, never in them: a release, an
// expiry or a break leaves the entries, and List skips names with a '#'
// ('#' never appears in an escaped key). The ledger node is a container,
// which the server removes once its last entry is deleted; a write that
// finds it gone creates it again.

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// putAttempts bounds how often PutEntry creates the ledger node again
// because the server removed it (emptied) in between.
const putAttempts = 3

// ledgerDir is the node under which key's entries live.
func (b *Backend) ledgerDir(key string) string { return b.keyDir(key) + "#ledger" }

// PutEntry implements lock.Ledger: it creates the entry's node, or sets
// its data when it is there; the ledger node (and the root) when missing.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	s, done, err := b.use(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	dir := b.ledgerDir(key)
	path := dir + "/" + id
	for attempt := 1; ; attempt++ {
		_, err := s.create(ctx, path, data, zk.FlagPersistent)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.set(ctx, path, data)
		}
		if !errors.Is(err, zk.ErrNoNode) || attempt >= putAttempts {
			return b.ledgerError("write", key, err)
		}
		// No ledger node yet (or removed once emptied; or the entry
		// deleted between our create and our set): make it, try again.
		if err := b.ensureDir(ctx, s, dir); err != nil {
			return b.ledgerError("write", key, err)
		}
	}
}

// Entries implements lock.Ledger. The holder of a key reads its ledger
// right after acquiring and must see every entry the previous holder
// wrote before it released; but this session's server (not the grant's)
// may lag behind the leader, and serves our reads. Sync makes it apply
// everything the leader had committed before it answers; the reads after
// it, in order on this session, see that.
func (b *Backend) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	s, done, err := b.use(ctx, true)
	if err != nil {
		return nil, err
	}
	defer done()
	dir := b.ledgerDir(key)
	if _, err := call(ctx, func() (string, error) { return s.conn.Sync(dir) }); err != nil {
		return nil, b.ledgerError("read", key, err)
	}
	ids, _, err := s.children(ctx, dir)
	if err != nil {
		return nil, b.ledgerError("read", key, err)
	}
	ds, err := getAll(ctx, s, ids, func(id string) string { return dir + "/" + id })
	if err != nil {
		return nil, b.ledgerError("read", key, err)
	}
	out := make(map[string][]byte, len(ids))
	for i, id := range ids {
		if ds[i].stat != nil { // not deleted meanwhile
			out[id] = ds[i].raw
		}
	}
	return out, nil
}

// DeleteEntries implements lock.Ledger: one delete per id, any version;
// a node (or a ledger) that is not there is no error, nor an id that
// cannot name one (and might not make a valid path).
func (b *Backend) DeleteEntries(ctx context.Context, key string, ids []string) error {
	if len(ids) == 0 {
		return nil // no session to dial for nothing
	}
	s, done, err := b.use(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	dir := b.ledgerDir(key)
	for _, id := range ids {
		if !lock.ValidEntryID(id) {
			continue
		}
		if err := ignore(s.remove(ctx, dir+"/"+id, -1), zk.ErrNoNode); err != nil {
			return b.ledgerError("delete from", key, err)
		}
	}
	return nil
}

// ledgerError is opError for the ledger of key (nil stays nil).
func (b *Backend) ledgerError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return b.opError(op+" the ledger of "+key, err)
}
