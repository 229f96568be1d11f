package consul

import (
	"context"
	"fmt"

	"github.com/distlock/distlock/internal/lock"
)

// breakTries bounds Break's rounds: a holder that moves to a hold session
// between our read and our transaction makes one more.
const breakTries = 3

// Break implements lock.Backend: it deletes the holder's entry and slot
// (with token != 0: only the holder with that token), each only if the
// session read with the token still holds it, then destroys that session
// (deleted first, the slot gets no lock-delay: a break hands over at
// once, as on every engine); the holder's next renewal is "not yours". If
// the holder moved to a hold's session in between, Break reads again.
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
		slot := ""
		if target.rec.Token != 0 { // it took over: it holds its slot
			slot = b.slotKey(key, target.rec.Slot)
		}
		ok, _, err := b.txn(ctx, "break "+key, b.dropOps(target.kv.Key, slot, target.kv.Session))
		if err != nil {
			return lock.Holder{}, err
		}
		if ok {
			b.cleanup(ctx, target.kv.Session)
			return target.holder(key), nil
		}
		// The holder moved to a hold's session, or let go, meanwhile.
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
