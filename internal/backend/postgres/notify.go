package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
)

// listenPause is how long a waiter that could not LISTEN (the server had
// too few connections free, or none) polls before it tries again.
const listenPause = 5 * time.Second

// errFewConnections: LISTEN declined, the waiter polls.
var errFewConnections = errors.New("postgres: too few connections free to hold one for LISTEN: polling instead")

// notify wakes waiters with LISTEN on the key's channel, on a connection
// of its own, held while the waiter waits: the only connection distlock
// keeps open. It listens only while a share of the server's connections
// (lock.HeadroomShare) stays free besides, for the holders' requests: a
// long line of waiters must not take the connections their holder needs
// to renew. Otherwise, or when it cannot connect, it fails and the waiter
// polls (lock.Polling), trying again after listenPause. The LISTEN is in
// effect when notify returns, so a release committed after that is never
// missed. If the connection breaks, the channel just goes quiet: waiters
// poll as a fallback.
func (b *Backend) notify(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if time.Now().UnixNano() < b.listenAfter.Load() {
		return nil, nil, errFewConnections
	}
	conn, err := b.listen(ctx, key)
	if err != nil {
		b.listenAfter.Store(time.Now().Add(listenPause).UnixNano())
		return nil, nil, err
	}
	lctx, stopListening := context.WithCancel(context.Background())
	out, done := lock.Relay(func() error {
		_, err := conn.WaitForNotification(lctx)
		return err
	})
	stop := func() {
		stopListening()
		<-done
		closeConn(conn)
	}
	return out, stop, nil
}

// listen connects and LISTENs on key's channel if the server has room.
func (b *Backend) listen(ctx context.Context, key string) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, b.connCfg)
	if err != nil {
		return nil, b.Unavailable(err)
	}
	_, used, limit, err := headroom(cctx, conn)
	if err == nil && float64(limit-used) < lock.HeadroomShare*float64(limit) {
		closeConn(conn)
		return nil, errFewConnections
	}
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+pgx.Identifier{b.channel(key)}.Sanitize())
	}
	if err != nil {
		closeConn(conn)
		return nil, b.Unavailable(err)
	}
	return conn, nil
}

// channel is the NOTIFY channel of key: identifiers are at most 63 bytes,
// keys up to 512, so it is a hash of the prefix and key.
func (b *Backend) channel(key string) string {
	h := sha256.Sum256([]byte(b.prefix + "\x00" + key))
	return "distlock_" + hex.EncodeToString(h[:16])
}
