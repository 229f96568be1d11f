package zookeeper

import (
	"context"

	"github.com/distlock/distlock/internal/lock"
)

// QueueLen is how many waiters are in line for key: the contenders behind
// the first limit places (those hold). A dead waiter keeps its place until
// the server expires its session (its --ttl).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	if err := lock.ValidateKey(key); err != nil {
		return 0, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	names, err := b.children(ctx, s, b.keyDir(key))
	if err != nil {
		return 0, b.opError("count the waiters of "+key, err)
	}
	line := parseLine(names)
	if len(line) == 0 {
		return 0, nil
	}
	var n int64
	for _, e := range line[min(len(line), line[0].limit):] {
		if e.lock != "" {
			n++
		}
	}
	return n, nil
}
