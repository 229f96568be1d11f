package redis

// Waiting for replicas (redis+sentinel://…?wait=N): Redis replicates
// asynchronously, so every script that grants, renews or holds a lock is
// followed on the same connection by WAIT N ttl/10 (at least 1 ms: WAIT 0
// would block for ever). It narrows the failover window, it does not
// close it (docs/ARCHITECTURE.md, "Redis"; docs/GUARANTEES.md).

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// run runs script s, followed by WAIT when the backend waits for
// replicas: the script's reply, and waited's error.
func (b *Backend) run(ctx context.Context, ttl time.Duration, s *goredis.Script, keys []string, args ...any) (*goredis.Cmd, error) {
	if b.wait <= 0 {
		return s.Run(ctx, b.c, keys, args...), nil
	}
	// EVAL with the script's text, not EVALSHA: a NOSCRIPT answer (a
	// new master after a failover) would cost a second round trip and a
	// second WAIT, which the renewal's time bound cannot afford. Redis
	// finds the compiled script by its hash all the same.
	var cmd *goredis.Cmd
	nr := b.waited(ctx, max(ttl/10, time.Millisecond), "the lock", func(p goredis.Pipeliner) goredis.Cmder {
		cmd = s.Eval(ctx, p, keys, args...)
		return cmd
	})
	return cmd, nr
}

// waited sends the command write queues and, when the backend waits for
// replicas, WAIT with timeout after it (one pipeline). It returns an
// error when the command succeeded but fewer than b.wait replicas
// acknowledged it (what) in time; the command's own error is the caller's.
func (b *Backend) waited(ctx context.Context, timeout time.Duration, what string, write func(goredis.Pipeliner) goredis.Cmder) error {
	var cmd, wait goredis.Cmder
	_, _ = b.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		cmd = write(p)
		if b.wait > 0 {
			wait = p.Do(ctx, "WAIT", b.wait, timeout.Milliseconds())
		}
		return nil
	})
	if cmd.Err() != nil || wait == nil {
		return nil
	}
	switch n, err := wait.(*goredis.Cmd).Int64(); {
	case err != nil:
		return fmt.Errorf("%s: cannot tell whether %d replicas have %s (WAIT failed: %s)", b.addr, b.wait, what, lock.FirstLine(err))
	case n < int64(b.wait):
		return fmt.Errorf("%s: only %d of the %d replicas asked for (wait=%d) acknowledged %s within %s", b.addr, n, b.wait, b.wait, what, timeout)
	}
	return nil
}

// unreplicatedGrant gives back a grant that too few replicas acknowledged
// (release, on a fresh short context: ctx may have ended) and says why
// the lock was not taken.
func (b *Backend) unreplicatedGrant(ctx context.Context, key string, nr error, release func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	what := "released it again"
	if err := release(cctx); err != nil && err != lock.ErrNotHeld {
		what = "could not release it (" + lock.FirstLine(err) + "): it expires after its TTL"
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("%s; %s was granted but not taken, and distlock %s: a failover could grant it twice. Check the replicas (INFO replication) or lower wait", nr, key, what),
		Err: nr,
	}
}
