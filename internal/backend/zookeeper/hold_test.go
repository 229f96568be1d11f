package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// ZooKeeper request opcodes, as a tap sees them (length, xid, opcode).
const (
	opDelete    = 2
	opMulti     = 14
	opCreateTTL = 21
)

// opcode is the opcode of the request data starts (go-zookeeper writes
// each request in one write), or -1.
func opcode(data []byte) int32 {
	if len(data) < 12 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(data[8:12]))
}

// holdRig is a real ZooKeeper, a backend straight to it (direct) and one
// through a fault proxy (b), both on the same prefix.
type holdRig struct {
	px     *faultproxy.Proxy
	direct *Backend
	b      *Backend
}

func newHoldRig(t *testing.T) holdRig {
	p := startServer(t)
	px, err := faultproxy.New(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return holdRig{px: px, direct: open(t, p.Addr(), "hold"), b: open(t, px.Addr(), "hold")}
}

// leaseKinds are the two nodes a Hold replaces, each as a lease on r.b
// (through the proxy): a hold node (distlock extend: a handle held, then
// resumed) and a running holder's lock node (--min-hold, acquire).
var leaseKinds = []struct {
	name string
	make func(t *testing.T, r holdRig) lock.Lease
}{
	{"hold node (extend)", func(t *testing.T, r holdRig) lock.Lease {
		l, err := lock.TryOnce(ctx(t), r.direct, request("k", "alice", 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Hold(ctx(t), 30*time.Second, lock.HoldHandle); err != nil {
			t.Fatal(err)
		}
		rl, err := r.b.Resume(ctx(t), l.Handle())
		if err != nil {
			t.Fatal(err)
		}
		return rl
	}},
	{"lock node (min-hold)", func(t *testing.T, r holdRig) lock.Lease {
		l, err := lock.TryOnce(ctx(t), r.b, request("k", "alice", 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}},
}

// holdAsync runs l.Hold for 30s on a context of timeout.
func holdAsync(l lock.Lease, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		hctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		done <- l.Hold(hctx, 30*time.Second, lock.HoldHandle)
	}()
	return done
}

// wantHeldBy checks, straight on the server, that the key is held by
// token as a handle's hold, and that another owner cannot take it.
func wantHeldBy(t *testing.T, r holdRig, token uint64) {
	t.Helper()
	h, held, err := r.direct.Inspect(ctx(t), "k")
	if err != nil || !held || h.Token != token || h.Hold != lock.HoldHandle {
		t.Fatalf("the key after Hold: held=%v %+v err=%v; want held by token %d as %q", held, h, err, token, lock.HoldHandle)
	}
	if l, err := lock.TryOnce(ctx(t), r.direct, request("k", "bob", 2*time.Second)); !errors.Is(err, lock.ErrHeld) {
		if l != nil {
			_ = l.Release(ctx(t))
		}
		t.Fatalf("another owner's try-once = %v, want busy: the lock was deleted", err)
	}
}

// A Hold whose multi (deleting the node it replaces) is applied but whose
// reply is lost (held past Hold's deadline) has moved the lock to the new
// hold node: it succeeds, and the lock is held. Before the fix it deleted
// the new node too, leaving the key free, and failed with a transient
// error (extend exited 69: "you still hold it") while another owner took
// the lock.
func TestHoldAfterLostReplyKeepsTheLock(t *testing.T) {
	for _, kind := range leaseKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := newHoldRig(t)
			l := kind.make(t, r)
			var multiSent atomic.Bool
			settling := make(chan struct{}, 1)
			r.px.SetTap(func(_ uint64, toServer bool, data []byte, _ time.Time) {
				switch op := opcode(data); {
				case !toServer:
				case op == opMulti && !multiSent.Swap(true):
					r.px.PauseReplies()
				case op == opDelete && multiSent.Load():
					notify(settling) // Hold's deadline passed: it settles now
				}
			})
			done := holdAsync(l, time.Second)
			select {
			case <-settling:
			case err := <-done:
				t.Fatalf("Hold returned (%v) before its multi's reply was let go", err)
			case <-time.After(10 * time.Second):
				t.Fatal("Hold sent no delete within 10s of its deadline")
			}
			r.px.Resume()
			if err := <-done; err != nil {
				t.Fatalf("Hold after its multi's reply was lost = %v, want success: the lock moved to the new hold node", err)
			}
			wantHeldBy(t, r, l.Token())
			// The lease knows its new node: extend again, straight.
			again, err := r.direct.Resume(ctx(t), l.Handle())
			if err == nil {
				err = again.Hold(ctx(t), 30*time.Second, lock.HoldHandle)
			}
			if err != nil {
				t.Fatalf("extend again after the settled Hold: %v", err)
			}
			wantHeldBy(t, r, l.Token())
		})
	}
}

// When the multi's reply is lost and the engine does not answer the
// read-back either, Hold fails without claiming the old expiry, and
// deletes nothing that holds the lock: the multi was applied, and the key
// is held by the new node once the engine answers again.
func TestHoldUnreadableAfterLostReplyKeepsTheLock(t *testing.T) {
	for _, kind := range leaseKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := newHoldRig(t)
			l := kind.make(t, r)
			var armed atomic.Bool
			armed.Store(true)
			r.px.SetTap(func(_ uint64, toServer bool, data []byte, _ time.Time) {
				if toServer && opcode(data) == opMulti && armed.Swap(false) {
					r.px.PauseReplies() // and keep them held: the read-back fails too
				}
			})
			done := holdAsync(l, time.Second)
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				// Before the fix Hold waited for its cleanup's reply.
				r.px.Resume()
				err = <-done
				t.Errorf("Hold did not return within 10s while the engine was silent (%v)", err)
			}
			t.Logf("Hold: %v", err)
			if err == nil || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "could not be read back") {
				t.Errorf("Hold with no answer at all = %v, want an engine error saying the lock could not be read back", err)
			}
			r.px.Resume()
			wantHeldBy(t, r, l.Token())
		})
	}
}

// A multi lost on its way (the connection reset before the server read
// it) was not applied: Hold deletes the new node again and fails, and the
// lock keeps the node it had.
func TestHoldAfterLostRequestKeepsTheOldNode(t *testing.T) {
	for _, kind := range leaseKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := newHoldRig(t)
			l := kind.make(t, r)
			before, _, err := r.direct.Inspect(ctx(t), "k")
			if err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			armed.Store(true)
			dropped := make(chan struct{}, 1)
			r.px.SetTap(func(_ uint64, toServer bool, data []byte, _ time.Time) {
				if toServer && opcode(data) == opMulti && armed.Swap(false) {
					r.px.Drop() // before the multi is written on: it is lost
					notify(dropped)
				}
			})
			done := holdAsync(l, 5*time.Second)
			<-dropped
			r.px.Heal()
			err = <-done
			t.Logf("Hold: %v", err)
			if err == nil || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "not applied") {
				t.Fatalf("Hold whose multi was lost = %v, want an engine error saying it was not applied", err)
			}
			h, held, err := r.direct.Inspect(ctx(t), "k")
			if err != nil || !held || h.Token != l.Token() || h.Hold != before.Hold {
				t.Fatalf("after a lost multi: held=%v %+v err=%v; want the old holder %+v", held, h, err, before)
			}
		})
	}
}

// holdNodes are the names of the key's hold nodes, read straight.
func holdNodes(t *testing.T, r holdRig) []string {
	t.Helper()
	names, _, err := r.direct.testAdmin(t).children(ctx(t), r.direct.keyDir("k"))
	if err != nil {
		t.Fatal(err)
	}
	var holds []string
	for _, n := range names {
		if strings.HasPrefix(n, "hold-") {
			holds = append(holds, n)
		}
	}
	return holds
}

// A Hold whose new node's create is applied but whose reply is lost fails
// and leaves no new node behind: the lock keeps the node it had, and its
// expiry. Before, the new hold node stayed and held the key for the new
// length after the error (after acquire's error, with no handle printed).
func TestHoldAfterLostCreateReplyLeavesNoNewNode(t *testing.T) {
	for _, kind := range leaseKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := newHoldRig(t)
			l := kind.make(t, r)
			had := holdNodes(t, r)
			var armed atomic.Bool
			armed.Store(true)
			r.px.SetTap(func(_ uint64, toServer bool, data []byte, _ time.Time) {
				if toServer && opcode(data) == opCreateTTL && armed.Swap(false) {
					r.px.PauseReplies()
				}
			})
			done := holdAsync(l, time.Second)
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Hold did not return within 10s of its deadline")
			}
			r.px.Resume()
			t.Logf("Hold: %v", err)
			if err == nil || errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("Hold whose create reply was lost = %v, want an engine error", err)
			}
			wait.Until(t, 5*time.Second, "the key's hold nodes to be as before the Hold", func() bool {
				return strings.Join(holdNodes(t, r), ",") == strings.Join(had, ",")
			})
			if h, held, err := r.direct.Inspect(ctx(t), "k"); err != nil || !held || h.Token != l.Token() {
				t.Fatalf("after the failed Hold: held=%v %+v err=%v; want still held by token %d", held, h, err, l.Token())
			}
		})
	}
}

// A Hold whose create finds its node's name taken (another extend of the
// same handle made it first: here an older build's, which never writes to
// its new hold node, so it holds the lock at version 0) leaves that node
// alone and fails: before, it deleted the node at version 0, the key was
// free, and the other extend had reported success (review).
func TestHoldLeavesANodeItDidNotMake(t *testing.T) {
	r := newHoldRig(t)
	l, err := lock.TryOnce(ctx(t), r.direct, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Hold(ctx(t), 30*time.Second, lock.HoldHandle); err != nil {
		t.Fatal(err)
	}
	late, err := r.direct.Resume(ctx(t), l.Handle()) // read before the other extend
	if err != nil {
		t.Fatal(err)
	}
	// The other extend, as an older build made it: the next generation's
	// hold node created, then the one it replaces deleted.
	s, done, err := r.direct.useAdmin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	dir := r.direct.keyDir("k")
	names, _, err := s.children(ctx(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	var old string
	for _, n := range names {
		if strings.HasPrefix(n, "hold-") {
			old = n
		}
	}
	f := strings.Split(old, "-") // hold, limit, nonce, gen, seq
	if len(f) != 5 {
		t.Fatalf("hold node %q (of %v): not hold-LIMIT-NONCE-GEN-SEQ", old, names)
	}
	gen, err := strconv.Atoi(f[3])
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Join([]string{f[0], f[1], f[2], strconv.Itoa(gen + 1), f[4]}, "-")
	d, ok, err := s.get(ctx(t), dir+"/"+old)
	if err != nil || !ok {
		t.Fatalf("read %s: %v %v", old, ok, err)
	}
	if err := s.createTTL(ctx(t), dir+"/"+next, d.raw, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.remove(ctx(t), dir+"/"+old, -1); err != nil {
		t.Fatal(err)
	}
	if err := late.Hold(ctx(t), 30*time.Second, lock.HoldHandle); err == nil {
		t.Fatal("the late Hold succeeded, though its node's name was taken")
	}
	wantHeldBy(t, r, l.Token())
}
