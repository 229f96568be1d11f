package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Fencing tokens. Sequence numbers and zxids start again when ZooKeeper
// loses its data, so the token follows lock.NextToken, with the key's last
// token in a persistent node beside the key's node (a container), so that
// it outlives every holder (grantToken).

// tokenAttempts bounds how often a grant reads the counter again because
// it moved between the read and the multi (it cannot while we are at the
// head of the line, short of a break and a new holder in between).
const tokenAttempts = 5

// tokenPath is where the last token of key is kept.
func (b *Backend) tokenPath(key string) string { return b.keyDir(key) + "#token" }

// counterRead is one read of a key's counter: its value and version;
// exists is false when it is missing.
type counterRead struct {
	last    uint64
	version int32
	exists  bool
	err     error
}

func (b *Backend) readCounter(ctx context.Context, s *session, key string) counterRead {
	d, ok, err := s.get(ctx, b.tokenPath(key))
	if err != nil || !ok {
		return counterRead{err: err}
	}
	last, err := strconv.ParseUint(string(d.raw), 10, 64)
	if err != nil {
		raw := string(d.raw[:min(len(d.raw), 40)])
		return counterRead{err: fmt.Errorf("the token counter of %s (node %s) holds %q, not a token: delete that node (the next token then follows the clock)", key, b.tokenPath(key), raw)}
	}
	return counterRead{last: last, version: d.stat.Version, exists: true}
}

// prefetchCounter reads key's counter on its own goroutine, so that the
// read goes out with the contender's read of the line.
func (b *Backend) prefetchCounter(ctx context.Context, s *session, key string) <-chan counterRead {
	ch := make(chan counterRead, 1)
	go func() { ch <- b.readCounter(ctx, s, key) }()
	return ch
}

// grantToken hands out the next token of key to the contender whose lock
// node is at path, writing rec (given the token) to that node in the same
// multi that raises the counter. first, when not nil, is a read of the
// counter already under way (prefetchCounter); later attempts read it
// again. granted is the monotonic time taken just before the multi was
// sent (the write proves our session was alive then). lost: our node is
// gone.
func (b *Backend) grantToken(ctx context.Context, s *session, key, path string, rec record, first <-chan counterRead) (out record, granted time.Time, lost bool, err error) {
	for attempt := 1; ; attempt++ {
		var r counterRead
		if first != nil {
			r, first = <-first, nil
		} else {
			r = b.readCounter(ctx, s, key)
		}
		if r.err != nil {
			return rec, granted, false, r.err
		}
		rec.Token = lock.NextToken(r.last, lock.ClockMicros(time.Now()))
		data := []byte(strconv.FormatUint(rec.Token, 10))
		var counterOp any = &zk.SetDataRequest{Path: b.tokenPath(key), Data: data, Version: r.version}
		if !r.exists {
			counterOp = &zk.CreateRequest{Path: b.tokenPath(key), Data: data, Acl: acl, Flags: zk.FlagPersistent}
		}
		granted = time.Now()
		res, err := s.multi(ctx, counterOp, &zk.SetDataRequest{Path: path, Data: rec.encode(), Version: -1})
		switch {
		case err == nil:
			return rec, granted, false, nil
		case len(res) == 2 && errors.Is(res[1].Error, zk.ErrNoNode):
			return rec, granted, true, nil // our node is gone: a lost place
		case !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode):
			return rec, granted, false, err
		case attempt >= tokenAttempts: // the counter moved (or appeared, or went) since our read, every time
			return rec, granted, false, fmt.Errorf("the token counter of %s kept moving", key)
		}
	}
}
