package lock

// The read side of the engine contract, over the holders an engine read:
// which holder describes a key, a try's refusal, Break's selection and
// answer, and List. The engine reads and writes; the rules live here once.

import (
	"context"
	"fmt"
	"strings"
)

// Oldest is the holder that has held longest: the lowest fencing token
// (tokens rise with every grant). A holder with token 0, whose record the
// engine could not read, comes last. hs must not be empty.
func Oldest(hs []Holder) Holder {
	best := hs[0]
	for _, h := range hs[1:] {
		if h.Token != 0 && (best.Token == 0 || h.Token < best.Token) {
			best = h
		}
	}
	return best
}

// SeenLimit is what an engine's reading of a key tells of one holder's
// --limit (1: a mutex's holder).
type SeenLimit struct {
	Have int
	// Bound: the reading could not read the limit (a semaphore's slot
	// holder whose record is gone) and Have is only its lower bound (above
	// the slot), which refutes a request only when it is above it.
	Bound bool
}

// Refuse answers a try for want slots of key (1: a mutex) that read the
// key's holders held, limits[i] telling held[i]'s --limit: a
// *LimitMismatchError when a holder uses another limit, else, when the try
// found no free slot (full), a *BusyError naming the oldest holder, else
// nil.
func Refuse(key string, want int, held []Holder, limits []SeenLimit, full bool) error {
	for _, l := range limits {
		if l.Have != want && (!l.Bound || l.Have > want) {
			return &LimitMismatchError{Key: key, Want: want, Have: l.Have}
		}
	}
	if full {
		return &BusyError{Holder: Oldest(held)}
	}
	return nil
}

// BreakHolders is Break over held, key's holders as the engine read them:
// it removes every holder token names (token 0: every one) with remove(i),
// the engine's compare-and-delete of held[i] (removed false: it let go
// meanwhile, or someone else holds its place now), and answers as
// BreakAnswer does. On a failed removal it answers that holder and the
// error.
func BreakHolders(key string, held []Holder, token uint64, remove func(i int) (removed bool, err error)) (Holder, error) {
	var broken, left []Holder
	for i, h := range held {
		if token != 0 && h.Token != token {
			left = append(left, h)
			continue
		}
		removed, err := remove(i)
		if err != nil {
			return h, err
		}
		if removed {
			broken = append(broken, h)
		}
	}
	return BreakAnswer(key, broken, left)
}

// BreakAnswer is what Break answers once the engine has removed broken and
// left the holders in left alone: the oldest holder broken; else a
// *BusyError naming the oldest holder left (the token named none of them);
// else ErrNotHeld (the key is free).
func BreakAnswer(key string, broken, left []Holder) (Holder, error) {
	switch {
	case len(broken) > 0:
		return Oldest(broken), nil
	case len(left) > 0:
		o := Oldest(left)
		return o, &BusyError{Holder: o}
	}
	return Holder{}, fmt.Errorf("%s: %w", key, ErrNotHeld)
}

// listable reports whether List shows key when asked for keyPrefix.
func listable(key, keyPrefix string) bool {
	return strings.HasPrefix(key, keyPrefix) && ValidateKey(key) == nil
}

// ListInspected is List over the keys an engine found that may be held
// (repeats, keys outside keyPrefix and invalid ones are passed over): each
// key inspected, listed when held, sorted by key.
func ListInspected(ctx context.Context, keyPrefix string, keys []string, inspect func(context.Context, string) (Holder, bool, error)) ([]Holder, error) {
	var out []Holder
	seen := map[string]bool{}
	for _, key := range keys {
		if seen[key] || !listable(key, keyPrefix) {
			continue
		}
		seen[key] = true
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, held, err := inspect(ctx, key)
		if err != nil {
			return nil, err
		}
		if held {
			out = append(out, h)
		}
	}
	SortHolders(out)
	return out, nil
}

// ListOldest is List over every current holder of the keys an engine
// read at once: each key under keyPrefix described by its oldest holder
// (Oldest), invalid keys passed over, sorted by key.
func ListOldest(keyPrefix string, hs []Holder) []Holder {
	byKey := map[string][]Holder{}
	for _, h := range hs {
		if listable(h.Key, keyPrefix) {
			byKey[h.Key] = append(byKey[h.Key], h)
		}
	}
	var out []Holder
	for _, held := range byKey {
		out = append(out, Oldest(held))
	}
	SortHolders(out)
	return out
}
