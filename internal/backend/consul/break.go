package consul

import (
	"context"
	"fmt"

	"github.com/distlock/distlock/internal/lock"
)

// breakTries bounds Break's rounds: a holder that moves to a hold session
// between our read and our destroy makes one more.
const breakTries = 3

// Break implements lock.Backend: it destroys the session of the holder
// (with token != 0: only the holder with that token), which deletes its
// entry and slot; its next renewal is "not yours". A session is one
// contender's alone, so destroying the one read with the token can only
// reach that holder. If the entry is still there afterwards (it moved to a
// hold session meanwhile), Break tries again.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	for range breakTries {
		v, err := b.readKey(ctx, key)
		if err != nil {
			return lock.Holder{}, err
		}
		hs := holders(v.line)
		if len(hs) == 0 {
			return lock.Holder{}, fmt.Errorf("%s: %w", key, lock.ErrNotHeld)
		}
		target := hs[0]
		if token != 0 {
			i := indexOfToken(hs, token)
			if i < 0 {
				return lock.Holder{}, &lock.BusyError{Holder: hs[0].holder(key)}
			}
			target = hs[i]
		}
		if err := b.destroySession(ctx, target.kv.Session); err != nil {
			return lock.Holder{}, err
		}
		after, err := b.readKey(ctx, key)
		if err != nil {
			return lock.Holder{}, err
		}
		if indexOfToken(holders(after.line), target.rec.Token) < 0 || target.rec.Token == 0 {
			return target.holder(key), nil
		}
	}
	return lock.Holder{}, &lock.UnavailableError{Msg: fmt.Sprintf("consul: break %s: the holder kept moving to new sessions; try again", key)}
}

// indexOfToken is the place of the holder with token among hs, or -1.
func indexOfToken(hs []entry, token uint64) int {
	for i, e := range hs {
		if e.rec.Token == token {
			return i
		}
	}
	return -1
}
