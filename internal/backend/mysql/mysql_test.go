package mysql

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// startServer starts a real MariaDB for one test, skipping when it is not
// installed unless DISTLOCK_TEST_REQUIRE_SERVERS=1.
func startServer(t *testing.T) *server.Process {
	t.Helper()
	p, err := server.StartMariaDB(t.TempDir())
	if errors.Is(err, server.ErrNoBinary) {
		if os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatalf("DISTLOCK_TEST_REQUIRE_SERVERS=1 but: %v", err)
		}
		t.Skipf("%v: the MySQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func serverURL(addr string) string {
	return "mysql://" + server.MariaDBUser + "@" + addr + "/" + server.MariaDBDatabase
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
	cfg, err := ParseURL("mysql://u:p%40w@db.example:3307/ops?tls=skip-verify")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Driver
	if d.Addr != "db.example:3307" || d.User != "u" || d.Passwd != "p@w" || d.DBName != "ops" || d.TLSConfig != "skip-verify" {
		t.Errorf("parsed as %+v", d)
	}
	if cfg, err := ParseURL("mysql://u@db.example/ops"); err != nil || cfg.Driver.Addr != "db.example:3306" {
		t.Errorf("default port: %v, %v", cfg.Driver, err)
	}
	for _, bad := range []string{"mysql://u:s3cret@db.example:3306/", "mysql://u:s3cret@/ops", "mysql://u:s3cret@db.example:3306/ops?tls=nonsense"} {
		_, err := ParseURL(bad)
		if !errors.Is(err, lock.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v; want ErrInvalid without the password", bad, err)
		}
	}
}

func TestUnreachableIsUnavailableQuickly(t *testing.T) {
	cfg, err := ParseURL("mysql://u:s3cret@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = 500 * time.Millisecond
	begin := time.Now()
	_, err = New(context.Background(), cfg)
	if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "mysql at 127.0.0.1:1") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("New on a closed port: %v", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("New took %s on a closed port", d)
	}
}

// The schema is created on first use; tokens come from the counter row,
// follow the database's clock in µs and rise across deletions.
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
	// A schema dropped and created again: tokens still rise (the counter
	// follows the clock).
	if _, err := b.db.ExecContext(ctx(t), "DROP TABLE distlock_lease, distlock_token"); err != nil {
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
	// Closing does not wait for the silent server.
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

// Keys compare byte for byte: MySQL's default collations would make "Job"
// and "job" (or "a" and "a ") one lock.
func TestKeysAreBytewise(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "t")
	for _, k := range []string{"job", "Job", "job ", "jöb"} {
		if _, err := lock.TryOnce(ctx(t), b, request(k, "o-"+k, 3*time.Second)); err != nil {
			t.Fatalf("%q: %v", k, err)
		}
	}
	hs, err := b.List(ctx(t), "")
	if err != nil || len(hs) != 4 {
		t.Fatalf("List = %+v, %v; want 4 locks", hs, err)
	}
}

// List's key prefix is literal: LIKE's wildcards ('%', '_') and its escape
// character ('!') in it match only themselves (list.sql escapes them).
func TestListPrefixIsLiteral(t *testing.T) {
	b := open(t, startServer(t).Addr(), "t")
	for _, k := range []string{"a%b", "axb", "a_c", "abc", "a!d", "a!!d"} {
		if _, err := lock.TryOnce(ctx(t), b, request(k, "o-"+k, 5*time.Second)); err != nil {
			t.Fatalf("%q: %v", k, err)
		}
	}
	for prefix, want := range map[string][]string{
		"a%": {"a%b"}, "a_": {"a_c"}, "a!": {"a!!d", "a!d"}, "a!!": {"a!!d"}, "a": {"a!!d", "a!d", "a%b", "a_c", "abc", "axb"},
	} {
		hs, err := b.List(ctx(t), prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hs {
			got = append(got, h.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}
