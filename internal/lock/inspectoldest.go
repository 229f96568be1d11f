package lock

import "context"

// InspectOldest is Inspect for an engine that reads every holder of a key
// at once (its InspectSlots, given as slots): the oldest of them (Oldest),
// ok false when the key has none.
func InspectOldest(ctx context.Context, key string, slots func(context.Context, string) ([]Holder, error)) (Holder, bool, error) {
	hs, err := slots(ctx, key)
	if err != nil || len(hs) == 0 {
		return Holder{}, false, err
	}
	return Oldest(hs), true, nil
}
