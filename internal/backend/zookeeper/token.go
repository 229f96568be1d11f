package zookeeper

// Fencing tokens on ZooKeeper.
//
// The line keeps its order by sequence number, but zxids (and sequence
// numbers) start again when ZooKeeper loses its data (a rebuilt ensemble,
// a restore, a wiped server), so they are not the token. The token follows
// lock.NextToken: max(last token of KEY + 1, distlock's wall clock at the
// grant, in µs). The last token of KEY lives in a persistent node next to
// the key's node, so that it outlives every holder (the key's node is a
// container, removed once empty):
//
//	<chroot>/<prefix>/<escaped KEY>#token    data: the last token, in decimal
//
// ('#' never appears in an escaped key; List skips such names). The new
// holder reads it, then in one multi sets it (compare-and-set on the
// version it read, or creates it when it was missing) and stamps its own
// lock node's record with the token: two grants can never hand out the
// same token, and a counter that moved in between makes the holder read
// it again.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// tokenAttempts bounds how often a grant reads the counter again because
// it moved between the read and the multi (it cannot while we are at the
// head of the line, short of a break and a new holder in between).
const tokenAttempts = 5

// tokenPath is where the last token of key is kept.
func (b *Backend) tokenPath(key string) string { return b.keyDir(key) + "#token" }

// readCounter reads key's counter: its value and version; ok is false
// when it is missing.
func (b *Backend) readCounter(ctx context.Context, s *session, key string) (last uint64, version int32, ok bool, err error) {
	d, ok, err := b.read(ctx, s, b.tokenPath(key))
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	last, perr := strconv.ParseUint(string(d.raw), 10, 64)
	if perr != nil {
		return 0, 0, false, fmt.Errorf("the token counter of %s (node %s) holds %q, not a token: delete that node (the next token then follows the clock)", key, b.tokenPath(key), truncate(d.raw, 40))
	}
	return last, d.stat.Version, true, nil
}

// counterRead is one read of a key's counter (readCounter).
type counterRead struct {
	last    uint64
	version int32
	exists  bool
	err     error
}

// prefetchCounter reads key's counter on its own goroutine, so that the
// read goes out with the contender's read of the line.
func (b *Backend) prefetchCounter(ctx context.Context, s *session, key string) <-chan counterRead {
	ch := make(chan counterRead, 1)
	go func() {
		var r counterRead
		r.last, r.version, r.exists, r.err = b.readCounter(ctx, s, key)
		ch <- r
	}()
	return ch
}

// grantToken hands out the next token of key to the contender whose lock
// node is at path, writing rec (given the token) to that node in the same
// multi that raises the counter. first, when not nil, is a read of the
// counter already under way (prefetchCounter); later attempts read it
// again. granted is the monotonic time taken just before the multi was
// sent (the write proves our session was alive then). lost: our node is
// gone.
func (b *Backend) grantToken(ctx context.Context, s *session, key, path string, rec record, first <-chan counterRead) (tok uint64, out record, granted time.Time, lost bool, err error) {
	tp := b.tokenPath(key)
	for attempt := 0; ; attempt++ {
		var r counterRead
		if attempt == 0 && first != nil {
			r = <-first
		} else {
			r.last, r.version, r.exists, r.err = b.readCounter(ctx, s, key)
		}
		last, version, exists, err := r.last, r.version, r.exists, r.err
		if err != nil {
			return 0, rec, granted, false, err
		}
		tok = lock.NextToken(last, lock.ClockMicros(time.Now()))
		rec.Token = tok
		data := []byte(strconv.FormatUint(tok, 10))
		var counterOp any = &zk.SetDataRequest{Path: tp, Data: data, Version: version}
		if !exists {
			counterOp = &zk.CreateRequest{Path: tp, Data: data, Acl: acl, Flags: zk.FlagPersistent}
		}
		granted = time.Now()
		res, err := call(ctx, func() ([]zk.MultiResponse, error) {
			return s.conn.Multi(counterOp, &zk.SetDataRequest{Path: path, Data: rec.encode(), Version: -1})
		})
		if err == nil && len(res) == 2 {
			err = res[1].Error // our node, first: a missing node is a lost place
			if err == nil || isRolledBack(err) {
				err = res[0].Error
			}
		}
		switch {
		case err == nil:
			return tok, rec, granted, false, nil
		case errors.Is(err, zk.ErrNoNode) && len(res) == 2 && errors.Is(res[1].Error, zk.ErrNoNode):
			return 0, rec, granted, true, nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
			// The counter moved (or appeared, or went) since our read.
			if attempt+1 >= tokenAttempts {
				return 0, rec, granted, false, fmt.Errorf("the token counter of %s kept moving", key)
			}
		default:
			return 0, rec, granted, false, err
		}
	}
}

// isRolledBack: an op of a failed multi that was not the one that failed.
func isRolledBack(err error) bool {
	return errors.Is(err, zk.ErrAPIError) || err.Error() == "unknown error: -2"
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
