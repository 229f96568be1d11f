package file

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Break races, pinned by stress. Each lease is its own open file (its own
// open file description), so these goroutines contend for flocks exactly as
// separate processes do.

// raceDir is a lock directory on tmpfs when the machine has one: the file
// engine's default directory (/tmp/distlock-<uid>) is on a tmpfs on many
// systems, and there an acquisition (whose fsync costs nothing) is fast
// enough to fall inside the window of a racing break.
func raceDir(t *testing.T) *Backend {
	t.Helper()
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "distlock-race-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	b, err := Open(dir, "distlock")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func raceRequest(owner string, limit int) lock.Request {
	return lock.Request{Key: "race", TTL: 2 * time.Second, Owner: owner, Limit: limit}
}

// acquireSoon retries a try-once while a racing break's brief probe of the
// lock file makes it look busy.
func acquireSoon(t *testing.T, b *Backend, req lock.Request) lock.Lease {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := lock.TryOnce(context.Background(), b, req)
		if err == nil {
			return l
		}
		if !errors.Is(err, lock.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire %s: %v", req.Owner, err)
		}
	}
}

// stressBudget bounds each stress test's time on a loaded machine; it runs
// its full count of iterations well within it on an idle one.
const stressBudget = 10 * time.Second

// published is the token of the holder now, for the racing breakers.
type published struct {
	mu   sync.Mutex
	tok  uint64
	next chan struct{} // closed when tok changes
}

func newPublished() *published { return &published{next: make(chan struct{})} }

func (p *published) set(tok uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tok = tok
	close(p.next)
	p.next = make(chan struct{})
}

func (p *published) get() (uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tok, p.next
}

// breakEach breaks, by its token, each holder published, once, until done;
// it reports each token whose break returned nil.
func breakEach(b *Backend, pub *published, done <-chan struct{}, broke func(tok uint64)) {
	var last uint64
	for {
		tok, next := pub.get()
		if tok == last {
			select {
			case <-next:
				continue
			case <-done:
				return
			}
		}
		last = tok
		if _, err := b.Break(context.Background(), "race", tok); err == nil {
			broke(tok)
		}
	}
}

// recordOf is the path of the record (sidecar) naming the holder of l.
func recordOf(b *Backend, l lock.Lease) string {
	return storeOf(l).metaPath
}

// (a) Runbooks break the holder they saw, by its token, while holders
// release and the next one acquires at once, thousands of times: a break
// must only ever remove the record of the holder with its token. A holder
// that finds its record gone at release (ErrNotHeld) must have been broken
// by a Break naming its own token.
func TestBreakTokenNeverBreaksNextHolder(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			b := raceDir(t)
			ctx := context.Background()
			const cycles, breakers = 3000, 8
			// More threads than cores: the kernel preempts breakers in
			// the middle of a break, as it does processes on a busy box.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(breakers + 2))
			var (
				pub         = newPublished()
				brokeTokens sync.Map // token -> a Break(token) returned nil
				done        = make(chan struct{})
				wg          sync.WaitGroup
			)
			for range breakers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					breakEach(b, pub, done, func(tok uint64) { brokeTokens.Store(tok, true) })
				}()
			}
			var lostRecord []uint64 // holders whose record was gone at release
			releaseErrs, holders := 0, 1
			l := acquireSoon(t, b, raceRequest("o0", limit))
			pub.set(l.Token())
			for start := time.Now(); holders <= cycles && time.Since(start) < stressBudget; holders++ {
				// Hold for a moment (up to 200µs): the breaks start.
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				err := l.Release(ctx)
				if errors.Is(err, lock.ErrNotHeld) {
					lostRecord = append(lostRecord, l.Token())
				} else if err != nil {
					// The record vanished between release's check and
					// its removal: a racing break removed it.
					releaseErrs++
					lostRecord = append(lostRecord, l.Token())
				}
				l = acquireSoon(t, b, raceRequest(fmt.Sprintf("o%d", holders), limit))
				pub.set(l.Token())
			}
			close(done)
			wg.Wait()
			if err := l.Release(ctx); errors.Is(err, lock.ErrNotHeld) {
				lostRecord = append(lostRecord, l.Token())
			}
			wrong, broke := 0, 0
			brokeTokens.Range(func(any, any) bool { broke++; return true })
			for _, tok := range lostRecord {
				if _, ok := brokeTokens.Load(tok); !ok {
					wrong++
				}
			}
			t.Logf("%d holders, %d breakers: %d holders broken by their token, %d next holders' records removed by a break naming another token, %d releases failed",
				holders, breakers, broke, wrong, releaseErrs)
			if releaseErrs > 0 {
				t.Errorf("%d releases failed racing a break", releaseErrs)
			}
			if wrong > 0 {
				t.Errorf("a break with another holder's token removed the record of %d of %d holders", wrong, holders)
			}
		})
	}
}

// (b) A break racing the holder's renewals, thousands of times: once Break
// has returned nil, the holder's next renewal answers ErrNotHeld and the
// record stays gone (a renewal that read the record before the break must
// not write it back after). A breaker breaks each holder by its token; the
// holder renews back to back (a pause of up to 50µs between renewals) until
// a renewal says the lease is gone, then releases, and the next acquires.
func TestBreakBeatsRacingRenewal(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			b := raceDir(t)
			ctx := context.Background()
			const iterations = 3000
			var (
				pub         = newPublished()
				brokeTokens sync.Map // token -> its Break has returned nil
				done        = make(chan struct{})
				wg          sync.WaitGroup
			)
			wg.Add(1)
			go func() {
				defer wg.Done()
				breakEach(b, pub, done, func(tok uint64) { brokeTokens.Store(tok, true) })
			}()
			holders, renewedAfter, recordBack, renews := 0, 0, 0, 0
			for start := time.Now(); holders < iterations && time.Since(start) < stressBudget; holders++ {
				l := acquireSoon(t, b, raceRequest(fmt.Sprintf("o%d", holders), limit))
				pub.set(l.Token())
				for {
					_, broken := brokeTokens.Load(l.Token()) // before the renewal starts
					err := l.Renew(ctx)
					renews++
					if err == nil && broken {
						renewedAfter++ // the break was undone
						break
					}
					if errors.Is(err, lock.ErrNotHeld) {
						break
					}
					if err != nil {
						t.Fatalf("holder %d: renew: %v", holders, err)
					}
					time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				}
				if _, broken := brokeTokens.Load(l.Token()); broken {
					if m, ok, _ := readMeta(recordOf(b, l)); ok && m.Token == l.Token() {
						recordBack++
					}
				}
				l.Release(ctx)
			}
			close(done)
			wg.Wait()
			t.Logf("%d holders broken while renewing (%d renewals): %d times a renewal that started after Break returned succeeded, %d times the record was back",
				holders, renews, renewedAfter, recordBack)
			if renewedAfter > 0 || recordBack > 0 {
				t.Errorf("a racing renewal undid the break of %d of %d holders (record back %d times)", renewedAfter, holders, recordBack)
			}
		})
	}
}

// storeOf is the file store of a lease of this engine.
func storeOf(l lock.Lease) *slotLock { return lock.StoreOf(l).(*slotLock) }
