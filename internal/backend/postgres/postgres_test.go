package postgres

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// startServer starts a real PostgreSQL for one test, skipping when it is
// not installed unless DISTLOCK_TEST_REQUIRE_SERVERS=1.
func startServer(t *testing.T) *server.Process {
	t.Helper()
	p, err := server.StartPostgres(t.TempDir())
	return mustStart(t, p, err)
}

// startServerMaxConnections is startServer with max_connections n.
func startServerMaxConnections(t *testing.T, n int) *server.Process {
	t.Helper()
	p, err := server.StartPostgresMaxConnections(t.TempDir(), n)
	return mustStart(t, p, err)
}

// mustStart takes a server start's result: the server, closed when the
// test ends; a skip when PostgreSQL is not installed (a failure under
// DISTLOCK_TEST_REQUIRE_SERVERS=1); a failure on any other error.
func mustStart(t *testing.T, p *server.Process, err error) *server.Process {
	t.Helper()
	if errors.Is(err, server.ErrNoBinary) {
		if os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatalf("DISTLOCK_TEST_REQUIRE_SERVERS=1 but: %v", err)
		}
		t.Skipf("%v: the PostgreSQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func serverURL(addr string) string {
	return "postgres://" + server.PostgresUser + "@" + addr + "/postgres?sslmode=disable"
}

func open(t *testing.T, addr, prefix string) *Backend {
	t.Helper()
	cfg, err := ParseURL(serverURL(addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = prefix
	cfg.ConnectTimeout = 5 * time.Second
	b, err := New(wait.Context(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func request(key, owner string, ttl time.Duration) lock.Request {
	return lock.Request{Key: key, TTL: ttl, Owner: owner, Meta: lock.Meta{Host: "h", PID: 42, User: "u", Command: "cmd", Note: "n"}}
}

func ctx(t *testing.T) context.Context { return wait.Context(t, 10*time.Second) }

func TestParseURL(t *testing.T) {
	for _, raw := range []string{
		"postgres://u:pw@db.example:5433/ops?sslmode=disable",
		"postgresql://u:pw@db.example:5433/ops?sslmode=disable",
	} {
		cfg, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		cc := cfg.Conn
		if cc.Host != "db.example" || cc.Port != 5433 || cc.User != "u" || cc.Password != "pw" || cc.Database != "ops" {
			t.Errorf("%s: parsed as host %s port %d user %s db %s", raw, cc.Host, cc.Port, cc.User, cc.Database)
		}
	}
	// pgx quotes what it read: a keyword string after the scheme has no
	// user-info for the rule to blank, and its password was on stderr.
	for _, raw := range []string{
		"postgres://u:s3cret@db.example:notaport/ops",
		"postgres://host=db.example password=s3cret",
		"postgres://host=db.example password='s3 cret'",
		"postgres://host=db.example PGPASSWORD=s3cret sslmode=disable",
	} {
		_, err := ParseURL(raw)
		if !errors.Is(err, lock.ErrInvalid) || strings.Contains(err.Error(), "s3") || strings.Contains(err.Error(), "cret") {
			t.Errorf("malformed URL %q: %v; want ErrInvalid without the password", raw, err)
		}
	}
}

func TestUnreachableIsUnavailableQuickly(t *testing.T) {
	cfg, err := ParseURL("postgres://u:s3cret@127.0.0.1:1/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = 500 * time.Millisecond
	begin := time.Now()
	_, err = New(context.Background(), cfg)
	if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "postgres at 127.0.0.1:1") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("New on a closed port: %v", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("New took %s on a closed port", d)
	}
}

// The schema is created on first use; tokens start at the database's
// clock in µs and rise across deletions.
func TestSchemaOnFirstUseAndTokens(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	before := time.Now()
	l1, err := lock.TryOnce(ctx(t), b, request("k", "o1", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if us := uint64(before.Add(-time.Hour).UnixMicro()); l1.Token() < us {
		t.Errorf("first token %d is not near the clock in µs (%d)", l1.Token(), us)
	}
	if err := l1.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	l2, err := lock.TryOnce(ctx(t), b, request("k", "o2", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l1.Token() {
		t.Errorf("token after a release %d is not greater than %d", l2.Token(), l1.Token())
	}
	if _, err := b.Break(ctx(t), "k", 0); err != nil {
		t.Fatal(err)
	}
	// A schema dropped and created again: tokens still rise (they follow
	// the clock).
	if _, err := (driver{b}).Exec(ctx(t), "DROP TABLE distlock_lease, distlock_key_token; DROP SEQUENCE distlock_token", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	l3, err := lock.TryOnce(ctx(t), b, request("k", "o3", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l3.Token() <= l2.Token() {
		t.Errorf("token after the schema was recreated %d is not greater than %d", l3.Token(), l2.Token())
	}
}

func TestBusyExpiryAndOwnerChecks(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	l, err := lock.TryOnce(ctx(t), b, request("k", "holder", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lock.TryOnce(ctx(t), b, request("k", "other", time.Second))
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder.Owner != "holder" || busy.Holder.Token != l.Token() ||
		busy.Holder.Meta != (lock.Meta{Host: "h", PID: 42, User: "u", Command: "cmd", Note: "n"}) ||
		busy.Holder.TTL != time.Second || busy.Holder.ExpiresIn <= 0 || busy.Holder.ExpiresIn > time.Second {
		t.Fatalf("second acquirer: %v (%+v)", err, busy)
	}
	if err := l.Renew(ctx(t)); err != nil {
		t.Fatalf("renew: %v", err)
	}
	// Expired by the database's clock: free, and the old lease is not ours
	// any more even though nobody took it.
	wait.Until(t, 5*time.Second, "the lease to expire on the server", func() bool {
		_, held, err := b.Inspect(ctx(t), "k")
		return err == nil && !held
	})
	if err := l.Renew(ctx(t)); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew of an expired lease: %v, want ErrNotHeld", err)
	}
	l2, err := lock.TryOnce(ctx(t), b, request("k", "other", 2*time.Second))
	if err != nil {
		t.Fatalf("take over an expired lease: %v", err)
	}
	if err := l.Release(ctx(t)); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release by the old owner: %v, want ErrNotHeld", err)
	}
	if h, held, err := b.Inspect(ctx(t), "k"); err != nil || !held || h.Token != l2.Token() {
		t.Fatalf("after the old owner's release: %+v %v %v; want the new holder", h, held, err)
	}
}

// Every call is bounded by its context, even against a server that never
// answers: the renew keeper relies on it.
func TestCallsBoundedByContextOnStoppedServer(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	l, err := lock.TryOnce(ctx(t), b, request("k", "o", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	defer p.Cont()
	for name, call := range map[string]func(context.Context) error{
		"renew":   l.Renew,
		"release": l.Release,
		"acquire": func(c context.Context) error {
			_, err := lock.TryOnce(c, b, request("k2", "o", time.Second))
			return err
		},
		"inspect":        func(c context.Context) error { _, _, err := b.Inspect(c, "k"); return err },
		"entries":        func(c context.Context) error { _, err := b.Entries(c, "k"); return err },
		"put an entry":   func(c context.Context) error { return b.PutEntry(c, "k", "a", nil) },
		"delete entries": func(c context.Context) error { return b.DeleteEntries(c, "k", []string{"a"}) },
	} {
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		begin := time.Now()
		err := call(c)
		took := time.Since(begin)
		cancel()
		if err == nil {
			t.Errorf("%s against a stopped server succeeded", name)
		}
		if took > 700*time.Millisecond {
			t.Errorf("%s took %s with a 200ms context", name, took)
		}
	}
	// Closing does not wait for the goodbyes pgx sends the silent server
	// after those cut-short requests (15s each).
	begin := time.Now()
	b.Close()
	if took := time.Since(begin); took > time.Second {
		t.Errorf("Close took %s against a stopped server", took)
	}
}

func TestSemaphoreAndLimitMismatch(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	sem := func(owner string) lock.Request {
		r := request("s", owner, 3*time.Second)
		r.Limit = 2
		return r
	}
	a, err := lock.TryOnce(ctx(t), b, sem("a"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := lock.TryOnce(ctx(t), b, sem("c"))
	if err != nil {
		t.Fatal(err)
	}
	if a.(lock.Slotted).Slot() != 0 || c.(lock.Slotted).Slot() != 1 {
		t.Errorf("slots %d, %d; want 0, 1", a.(lock.Slotted).Slot(), c.(lock.Slotted).Slot())
	}
	var busy *lock.BusyError
	if _, err := lock.TryOnce(ctx(t), b, sem("d")); !errors.As(err, &busy) || busy.Holder.Token != a.Token() {
		t.Fatalf("third holder of a limit-2 semaphore: %v; want busy naming the oldest holder", err)
	}
	var mm *lock.LimitMismatchError
	if _, err := lock.TryOnce(ctx(t), b, request("s", "m", time.Second)); !errors.As(err, &mm) || mm.Have != 2 || mm.Want != 1 {
		t.Fatalf("mutex on a semaphore: %v; want limit mismatch 2 vs 1", err)
	}
	// Slot 0 freed: the mutex is still refused (slot 1 holds with limit 2).
	if err := a.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.TryOnce(ctx(t), b, request("s", "m", time.Second)); !errors.As(err, &mm) {
		t.Fatalf("mutex on a semaphore with slot 0 free: %v; want limit mismatch", err)
	}
	// Break by token takes one holder only.
	d, err := lock.TryOnce(ctx(t), b, sem("d"))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := b.Break(ctx(t), "s", c.Token()); err != nil || h.Token != c.Token() {
		t.Fatalf("break --token: %+v, %v", h, err)
	}
	if h, held, err := b.Inspect(ctx(t), "s"); err != nil || !held || h.Token != d.Token() {
		t.Fatalf("after breaking one holder: %+v %v %v", h, held, err)
	}
	if _, err := b.Break(ctx(t), "s", 12345); !errors.As(err, &busy) {
		t.Fatalf("break with a stale token: %v; want busy", err)
	}
	if _, err := b.Break(ctx(t), "s", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Break(ctx(t), "s", 0); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("break of a free key: %v; want ErrNotHeld", err)
	}
}

// Many acquirers at once: exactly one wins, on a mutex and on each slot.
func TestConcurrentAcquirersOneWinner(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	for round := range 5 {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won []lock.Lease
		)
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := request("race", "o"+string(rune('a'+i)), 5*time.Second)
				if round%2 == 1 {
					r.Limit = 3
				}
				l, err := lock.TryOnce(ctx(t), b, r)
				var busy *lock.BusyError
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				case !errors.As(err, &busy):
					t.Errorf("acquirer %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		want := 1
		if round%2 == 1 {
			want = 3
		}
		if len(won) != want {
			t.Fatalf("round %d: %d winners, want %d", round, len(won), want)
		}
		for _, l := range won {
			if err := l.Release(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A release wakes the key's waiters (NOTIFY), and so does one that finds
// its row expired (nobody took it over): that one reports it not held,
// but deletes the row all the same. A break wakes them too.
func TestNotifyWakesOnRelease(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	ch, stop, err := b.notify(ctx(t), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	woken := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification within 5s of %s", what)
		}
	}
	l, err := lock.TryOnce(ctx(t), b, request("n", "o", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("woken before any release")
	case <-time.After(100 * time.Millisecond): // nothing may come; not an assertion of timing
	}
	if err := l.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	woken("the release")
	l, err = lock.TryOnce(ctx(t), b, request("n", "o", 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 5*time.Second, "the lease to expire on the server", func() bool {
		left, found, err := b.LeaseLeft(ctx(t), "n", l.Token())
		return err == nil && found && left < 0
	})
	if err := l.Release(ctx(t)); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release of an expired lease: %v, want ErrNotHeld", err)
	}
	if _, found, err := b.LeaseLeft(ctx(t), "n", l.Token()); err != nil || found {
		t.Fatalf("after the release of an expired lease: found %v, err %v; want the row deleted", found, err)
	}
	woken("the release of an expired lease")
	if _, err := lock.TryOnce(ctx(t), b, request("n", "o", 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Break(ctx(t), "n", 0); err != nil {
		t.Fatal(err)
	}
	woken("the break")
}

func TestHoldResumeAndList(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	other := open(t, p.Addr(), "other-prefix")
	l, err := lock.TryOnce(ctx(t), b, request("job:a", "o", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.TryOnce(ctx(t), b, request("job:b", "o2", 3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.TryOnce(ctx(t), other, request("job:c", "o3", 3*time.Second)); err != nil {
		t.Fatal(err)
	}
	hs, err := b.List(ctx(t), "job:")
	if err != nil || len(hs) != 2 || hs[0].Key != "job:a" || hs[1].Key != "job:b" {
		t.Fatalf("List = %+v, %v", hs, err)
	}
	if hs, err := b.List(ctx(t), "job:b"); err != nil || len(hs) != 1 {
		t.Fatalf("List(job:b) = %+v, %v", hs, err)
	}

	hl := l
	if err := hl.Hold(ctx(t), 4*time.Second, lock.HoldHandle); err != nil {
		t.Fatal(err)
	}
	h, held, err := b.Inspect(ctx(t), "job:a")
	if err != nil || !held || h.Hold != lock.HoldHandle || h.TTL != 4*time.Second {
		t.Fatalf("after Hold: %+v %v %v", h, held, err)
	}
	r, err := b.Resume(ctx(t), hl.Handle())
	if err != nil || r.Token() != l.Token() {
		t.Fatalf("Resume: %v, %v", r, err)
	}
	bad := hl.Handle()
	bad.Token++
	if _, err := b.Resume(ctx(t), bad); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Resume with another token: %v; want ErrNotHeld", err)
	}
	if err := r.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := b.Inspect(ctx(t), "job:a"); held {
		t.Fatal("held after release of the resumed lease")
	}
}

// A wait that reaches its deadline is busy, naming the holder; a release
// ends the wait with the lock.
func TestAcquireWaits(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	l, err := lock.TryOnce(ctx(t), b, request("w", "holder", 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var seen []lock.Holder
	_, err = waitFor(c, b, request("w", "waiter", time.Second), func(h lock.Holder) { seen = append(seen, h) })
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder.Token != l.Token() {
		t.Fatalf("wait past its deadline: %v; want busy naming token %d", err, l.Token())
	}
	if len(seen) != 1 || seen[0].Owner != "holder" {
		t.Errorf("progress saw %+v; want the holder once", seen)
	}

	got := make(chan error, 1)
	go func() {
		w, err := waitFor(ctx(t), b, request("w", "waiter", time.Second), nil)
		if err == nil && w.Owner() != "waiter" {
			err = errors.New("acquired with another owner")
		}
		got <- err
	}()
	if err := l.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock within 10s of the release")
	}
}

// A point-in-time restore (or a failover to an asynchronous replica) puts
// the database back to an older state: here the sequence and the key's
// last token are set back to what they were after the first grant. A
// token already handed out must not be handed out again: the next token
// is max(last + 1, the database's clock in µs), so it is still greater
// than every earlier one. And a clock behind the last token still gives
// last + 1 (lock.NextToken).
func TestTokensRiseAfterRestoreToOlderState(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	take := func(owner string) uint64 {
		t.Helper()
		l, err := lock.TryOnce(ctx(t), b, request("pitr", owner, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
		return l.Token()
	}
	t1 := take("o1")
	t2 := take("o2")
	// The restore: the state right after t1 was granted.
	restore := `SELECT setval('distlock_token', $1::bigint);
		DO $$ BEGIN
			IF to_regclass('distlock_key_token') IS NOT NULL THEN
				UPDATE distlock_key_token SET token = ` + "(SELECT last_value FROM distlock_token)" + ` WHERE lock_key = 'pitr';
			END IF;
		END $$`
	if _, err := (driver{b}).Exec(ctx(t), strings.Replace(restore, "$1::bigint", strconvU(t1), 1), pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if t3 := take("o3"); t3 <= t2 {
		t.Fatalf("after a restore to the state after token %d: token %d, not greater than %d already handed out", t1, t3, t2)
	}
	// The database's clock behind the last token (a counter far ahead):
	// the next token is that counter + 1.
	ahead := uint64(time.Now().Add(24 * time.Hour).UnixMicro())
	if _, err := (driver{b}).Exec(ctx(t), "UPDATE distlock_key_token SET token = "+strconvU(ahead)+" WHERE lock_key = 'pitr'", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if t4 := take("o4"); t4 != ahead+1 {
		t.Fatalf("with the last token %d ahead of the clock: token %d, want %d", ahead, t4, ahead+1)
	}
}

func strconvU(v uint64) string { return strconv.FormatUint(v, 10) }
