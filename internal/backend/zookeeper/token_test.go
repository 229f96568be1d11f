package zookeeper

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// The token is max(the key's counter + 1, the wall clock in µs), not the
// lock node's czxid: with the counter node far ahead of the clock each
// grant gives counter + 1 (mutex and semaphore slot), and the holder's
// record, Inspect, List, the handle and break --token all show it; with
// the counter node gone (ZooKeeper lost its data) the token follows the
// clock.
func TestTokenFollowsCounterAndClock(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "tok")
	ahead := lock.ClockMicros(time.Now().Add(24 * time.Hour))
	setCounter := func(key string, v uint64) {
		t.Helper()
		data := []byte(strconv.FormatUint(v, 10))
		s, done, err := b.useAdmin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		_, err = s.conn.Set(b.tokenPath(key), data, -1)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = s.conn.Create(b.tokenPath(key), data, zk.FlagPersistent, acl)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	setCounter("c", ahead)
	l, err := lock.TryOnce(ctx(t), b, request("c", "alice", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != ahead+1 || l.Handle().Token != ahead+1 {
		t.Fatalf("token %d, handle's %d; want %d", l.Token(), l.Handle().Token, ahead+1)
	}
	if h, ok, err := b.Inspect(ctx(t), "c"); err != nil || !ok || h.Token != l.Token() {
		t.Fatalf("Inspect: %+v %v %v; want token %d", h, ok, err, l.Token())
	}
	hs, err := b.List(ctx(t), "")
	if err != nil || len(hs) != 1 || hs[0].Key != "c" || hs[0].Token != l.Token() {
		t.Fatalf("List: %+v, %v; want only c with token %d (the counter node is no key)", hs, err, l.Token())
	}
	if _, err := b.Break(ctx(t), "c", l.Token()); err != nil {
		t.Fatalf("break --token %d: %v", l.Token(), err)
	}

	sem := request("s", "s1", 3*time.Second)
	sem.Limit = 2
	setCounter("s", ahead+100)
	s1, err := lock.TryOnce(ctx(t), b, sem)
	if err != nil || s1.Token() != ahead+101 {
		t.Fatalf("slot: %v, %v; want token %d", s1, err, ahead+101)
	}
	_ = s1.Release(ctx(t))

	// ZooKeeper lost the counter: the clock.
	as, done, err := b.useAdmin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	err = as.conn.Delete(b.tokenPath("c"), -1)
	done()
	if err != nil {
		t.Fatal(err)
	}
	before := lock.ClockMicros(time.Now())
	l, err = lock.TryOnce(ctx(t), b, request("c", "bob", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() < before || l.Token() > lock.ClockMicros(time.Now()) {
		t.Fatalf("token %d with no counter; want the clock at the grant (%d…)", l.Token(), before)
	}
	_ = l.Release(ctx(t))
}
