package file

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Break implements lock.Backend, for a mutex and a semaphore alike. The
// flock belongs to the holder's process and cannot be taken from it: break
// removes the record that names the holder and signals the holding
// distlock (SIGWINCH, harmless to anything else) so that its renewer
// checks at once, finds the lease gone, stops its child and lets go of the
// flock.
//
// With token != 0 it breaks the holder with that token, or returns a
// *lock.BusyError naming the oldest holder when none has it. With token 0
// it breaks every holder it finds (a mutex's one) and returns the oldest.
//
// Each removal is a compare-and-delete under the key's record lock, which
// every writer of the key's records holds too (record.go): the record
// removed is the one inspected, naming the holder and token seen, never
// the next holder's, and a renewal of the broken holder that read the
// record before cannot write it back after.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	held, err := b.holders(ctx, key)
	if err != nil || len(held) == 0 {
		// Free: nothing to break (and no record lock to make for a key
		// that may never have been used).
		if err == nil {
			err = lock.ErrNotHeld
		}
		return lock.Holder{}, err
	}
	now := time.Now()
	victims, others := held, []slotHolder(nil)
	if token != 0 {
		victims, others = splitByToken(held, token)
		if len(victims) == 0 {
			o := oldest(held).holder(key, now)
			return o, &lock.BusyError{Holder: o}
		}
	}
	var broken []slotHolder
	for _, s := range victims {
		removed, err := b.removeRecord(ctx, key, s)
		if err != nil {
			return s.holder(key, now), err
		}
		if !removed {
			continue // it let go by itself meanwhile
		}
		broken = append(broken, s)
		if s.m.Hold == "" && s.m.PID > 0 && s.m.Host == b.host { // a hold's process is gone
			pokeHolder(s.m.PID)
		}
	}
	switch {
	case len(broken) > 0:
		return oldest(broken).holder(key, now), nil
	case len(others) > 0: // the holder with the token let go; others still hold
		o := oldest(others).holder(key, now)
		return o, &lock.BusyError{Holder: o}
	}
	return lock.Holder{}, lock.ErrNotHeld
}

// splitByToken splits held into the holder with token and the others.
func splitByToken(held []slotHolder, token uint64) (with, others []slotHolder) {
	for _, s := range held {
		if s.ok && s.m.Token == token {
			with = append(with, s)
		} else {
			others = append(others, s)
		}
	}
	return with, others
}

// removeRecord removes s's record under the key's record lock when it
// still names s's holder with its token; removed is false when it does not
// (the holder let go meanwhile). A slot seen without a record is broken
// already: removed, with nothing to remove.
func (b *Backend) removeRecord(ctx context.Context, key string, s slotHolder) (removed bool, err error) {
	if !s.ok {
		return true, nil
	}
	err = withRecordLock(ctx, b.keyPaths(key).recLock(), func() error {
		ours, err := ownRecord{owner: s.m.Owner, token: s.m.Token, path: s.path}.names()
		if err != nil || !ours {
			return err
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		removed = true
		return nil
	})
	return removed, err
}
