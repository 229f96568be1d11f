package postgres

import (
	"context"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
)

// waitFor waits for req through the one wait loop, until ctx ends.
func waitFor(ctx context.Context, b *Backend, req lock.Request, progress func(lock.Holder)) (lock.Lease, error) {
	return acquire.Acquire(ctx, b, req, acquire.Options{Wait: acquire.Forever, Progress: progress})
}
