package mysql

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestBreakRacingAnAcquirer runs break.sql one statement at a time on a
// connection of the test's own, and acquires the key between the break's
// read of the leases and the rest of it: the break must delete exactly
// the leases it read (and reports), never the new holder's: on a free
// mutex, on one whose lease has expired (a break deletes it, unreported),
// and on a semaphore with a holder, without and with --token.
func TestBreakRacingAnAcquirer(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	if _, err := b.db.ExecContext(ctx(t), queries.Schema); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		limit   int
		held    bool // a holder before the break, whom it breaks
		byToken bool // break --token <that holder's token>
		expired bool // a holder before the break whose lease has expired
	}{
		{name: "free mutex", limit: 1},
		{name: "expired mutex", limit: 1, expired: true},
		{name: "semaphore", limit: 2, held: true},
		{name: "semaphore by token", limit: 2, held: true, byToken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "race-" + strings.ReplaceAll(tc.name, " ", "-")
			req := func(owner string) lock.Request {
				r := request(key, owner, 10*time.Second)
				r.Limit = tc.limit
				return r
			}
			var want []uint64
			if tc.held {
				old, err := lock.TryOnce(ctx(t), b, req("old"))
				if err != nil {
					t.Fatal(err)
				}
				want = []uint64{old.Token()}
			}
			if tc.expired {
				old, err := lock.TryOnce(ctx(t), b, request(key, "old", 100*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				wait.Until(t, 5*time.Second, "the old lease to expire", func() bool {
					left, found, err := b.LeaseLeft(ctx(t), key, old.Token())
					return err == nil && found && left < 0
				})
			}
			var token uint64
			if tc.byToken {
				token = want[0]
			}
			var acquired func() (lock.Lease, error)
			got := breakSteps(t, b, key, token, func() {
				acquired = acquireDuring(t, b, req("new"))
			})
			newcomer, err := acquired()
			if err != nil {
				t.Fatalf("the acquirer during the break: %v", err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("the break read tokens %v, want %v", got, want)
			}
			left, found, err := b.LeaseLeft(ctx(t), key, newcomer.Token())
			if err != nil || !found || left <= 0 {
				t.Errorf("the new holder (token %d) after the break: %s left, found %v, %v; the break deleted a lease it never read",
					newcomer.Token(), left, found, err)
			}
			if err := newcomer.Renew(ctx(t)); err != nil {
				t.Errorf("the new holder's renewal after the break: %v", err)
			}
			for _, tok := range want {
				if _, found, err := b.LeaseLeft(ctx(t), key, tok); err != nil || found {
					t.Errorf("the lease the break read (token %d): found %v, %v; want it deleted", tok, found, err)
				}
			}
		})
	}
}

// TestBreakByTokenDeletesTheLeaseItRead: a lease that break --token
// reads live and that expires before the break's delete is deleted all
// the same, as the break reports it broken.
func TestBreakByTokenDeletesTheLeaseItRead(t *testing.T) {
	b := open(t, startServer(t).Addr(), "t")
	l, err := lock.TryOnce(ctx(t), b, request("k", "o", 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := breakSteps(t, b, "k", l.Token(), func() {
		wait.Until(t, 5*time.Second, "the lease to expire", func() bool {
			left, found, err := b.LeaseLeft(ctx(t), "k", l.Token())
			return err == nil && found && left < 0
		})
	})
	if !slices.Equal(got, []uint64{l.Token()}) {
		t.Fatalf("the break read tokens %v, want [%d]", got, l.Token())
	}
	if _, found, err := b.LeaseLeft(ctx(t), "k", l.Token()); err != nil || found {
		t.Errorf("the lease the break read and reports: found %v, %v; want it deleted", found, err)
	}
}

// breakSteps runs break.sql with prefix "t", key and token one statement
// at a time (the file's statements end their line with ';') on one
// connection, calling between right after the statement that reads the
// leases (the one that gives rows). It returns the tokens that statement
// read: what Break reports broken.
func breakSteps(t *testing.T, b *Backend, key string, token uint64, between func()) []uint64 {
	t.Helper()
	conn, err := b.db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var read []uint64
	for _, stmt := range strings.Split(queries.Break, ";\n") {
		var args []any
		if strings.Contains(stmt, "?") {
			args = []any{"t", key, int64(token)}
		}
		rows, err := conn.QueryContext(ctx(t), stmt, args...)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			dest := make([]any, len(cols))
			for i := range dest {
				dest[i] = new(sql.RawBytes)
			}
			var tok uint64
			dest[2] = &tok // the key, then the holder columns: owner, token, …
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			read = append(read, tok)
		}
		if err := rows.Close(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if len(cols) > 0 {
			between()
		}
	}
	return read
}

// acquireDuring starts a try-once acquire and returns once it has ended
// or waits on a lock that an open transaction holds (the break's),
// failing t if neither happens within 10 s. The function it returns waits
// for the acquire's end and gives its answer.
func acquireDuring(t *testing.T, b *Backend, r lock.Request) func() (lock.Lease, error) {
	t.Helper()
	type result struct {
		l   lock.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := lock.TryOnce(wait.Context(t, 20*time.Second), b, r)
		done <- result{l, err}
	}()
	var res result
	ended := false
	// INNODB_TRX is a cache that the server refreshes only when it was not
	// read in the last 100 ms: it is read every 150 ms.
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !ended {
		select {
		case res = <-done:
			ended = true
		case <-deadline:
			t.Fatal("the acquirer neither ended nor waited on the break's lock within 10s")
		case <-tick.C:
			var waiting int
			err := b.db.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&waiting)
			if err != nil {
				t.Fatal(err)
			}
			if waiting > 0 {
				return func() (lock.Lease, error) { r := <-done; return r.l, r.err }
			}
		}
	}
	return func() (lock.Lease, error) { return res.l, res.err }
}
