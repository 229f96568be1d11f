package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// A waiter LISTENs on a connection of its own while the server has room;
// when fewer than a fifth of max_connections would stay free besides, it
// polls instead (a long line of waiters must not take the connections
// its holder needs to renew), and still gets the lock once it is
// released.
func TestWaiterListensOnlyWithRoom(t *testing.T) {
	for _, crowded := range []bool{false, true} {
		name := map[bool]string{false: "room", true: "crowded"}[crowded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := startServerMaxConnections(t, 10)
			holder, waiter := open(t, p.Addr(), "t"), open(t, p.Addr(), "t")
			watcher := connect(t, p.Addr())
			listening := func() bool {
				var n int
				if err := watcher.QueryRow(ctx(t), "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n > 0
			}
			l, err := lock.TryOnce(ctx(t), holder, request("k", "h", 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if crowded {
				for range 7 { // with the watcher's, 8 of 10: a LISTEN would leave 1 free
					connect(t, p.Addr())
				}
			}
			got := make(chan error, 1)
			go func() {
				l, err := waitFor(wait.Context(t, 20*time.Second), waiter, request("k", "w", 30*time.Second), nil)
				if err == nil {
					err = l.Release(ctx(t))
				}
				got <- err
			}()
			if crowded {
				wait.Until(t, 5*time.Second, "the waiter to decline LISTEN", func() bool { return waiter.listenAfter.Load() != 0 })
				if listening() {
					t.Error("the waiter LISTENs with 1 connection of 10 free")
				}
			} else {
				wait.Until(t, 5*time.Second, "the waiter to LISTEN", listening)
			}
			if err := l.Release(ctx(t)); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("the waiter: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter did not get the lock within 5s of its release")
			}
		})
	}
}

// connect opens a connection of the test's to the server at addr.
func connect(t *testing.T, addr string) *pgx.Conn {
	c, err := pgx.Connect(ctx(t), serverURL(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
