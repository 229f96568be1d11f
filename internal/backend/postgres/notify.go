package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"
)

// notify wakes waiters with LISTEN on the key's channel, on a
// connection of its own (a pooled one would carry the subscription to
// other uses). The LISTEN is in effect when Notify returns, so a release
// committed after that is never missed. If the connection breaks, the
// channel just goes quiet: waiters poll as a fallback.
func (b *Backend) notify(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, b.connCfg)
	if err != nil {
		return nil, nil, b.unavailable(err)
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{b.channel(key)}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, nil, b.unavailable(err)
	}
	out := make(chan struct{}, 1)
	lctx, stopListening := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := conn.WaitForNotification(lctx); err != nil {
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	stop := func() {
		stopListening()
		<-done
		// A goodbye to the server, bounded (it may be silent).
		cctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = conn.PgConn().Conn().SetDeadline(time.Now().Add(100 * time.Millisecond))
		conn.Close(cctx)
	}
	return out, stop, nil
}

// channel is the NOTIFY channel of key: identifiers are at most 63 bytes,
// keys up to 512, so it is a hash of the prefix and key.
func (b *Backend) channel(key string) string {
	h := sha256.Sum256([]byte(b.prefix + "\x00" + key))
	return "distlock_" + hex.EncodeToString(h[:16])
}
