package lock

// Break on an engine whose holder can move while a break is under way: a
// hold moves a Consul holder's entry to a new session between the break's
// read and its compare-and-delete, which then fails, though the holder
// still holds.

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrMoved is what a break's removal (BreakRead) answers when the holder
// it read still holds, but no longer as read (a hold moved it to a new
// session or lease): BreakAgain breaks it again by its token.
var ErrMoved = errors.New("the holder moved since it was read")

// BreakRead is one read of key's holders for a break: the holders, and
// remove(i), the engine's compare-and-delete of held[i] as BreakHolders
// takes it, answering ErrMoved for a holder that moved.
type BreakRead func(ctx context.Context) (held []Holder, remove func(i int) (bool, error), err error)

// breakRounds bounds BreakAgain: a holder that keeps moving is not broken.
const breakRounds = 3

// BreakAgain is Break by BreakHolders over a read of key's holders, then,
// for each holder that moved meanwhile, again by its token after another
// read: three rounds at most. A holder read with no token yet (a taker
// that had not written it: only a break of every holder, token 0, reads
// one) that moved may have taken its token since (a ZooKeeper node's
// version changes then): the next round breaks every holder again. It answers the oldest holder broken, else what the last
// break answered (the token named no holder, or none holds); a failure
// to read or remove at once.
func BreakAgain(ctx context.Context, key string, token uint64, read BreakRead) (Holder, error) {
	var broken []Holder
	tokens := []uint64{token}
	for range breakRounds {
		var moved []uint64
		var h Holder
		var err error
		for _, t := range tokens {
			if h, err = breakRead(ctx, key, t, read, &moved); err == nil {
				broken = append(broken, h)
			} else if !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrHeld) {
				return h, err
			}
		}
		switch {
		case len(moved) > 0:
			tokens = slices.Compact(slices.Sorted(slices.Values(moved)))
		case len(broken) > 0: // a moved holder may have let go since
			return Oldest(broken), nil
		default:
			return h, err
		}
	}
	return Holder{}, &UnavailableError{Msg: fmt.Sprintf("break %s: the holder kept moving (to new sessions); try again", key)}
}

// breakRead is one round of BreakAgain for token: one read, then
// BreakHolders, adding the tokens of the holders that moved to moved.
func breakRead(ctx context.Context, key string, token uint64, read BreakRead, moved *[]uint64) (Holder, error) {
	held, remove, err := read(ctx)
	if err != nil {
		return Holder{}, err
	}
	return BreakHolders(key, held, token, func(i int) (bool, error) {
		ok, err := remove(i)
		if errors.Is(err, ErrMoved) {
			*moved = append(*moved, held[i].Token)
			return false, nil
		}
		return ok, err
	})
}
