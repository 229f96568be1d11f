package redis

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestMutexRecordKeepsItsLayout: a mutex is a semaphore of one, but its
// record stays where and what it was before the merge (the lock hash, the
// same fields, no limit), so a holder on an older build and one on this
// build exclude each other: each build's scripts look for the other's
// holder at the lock hash, by its owner field.
func TestMutexRecordKeepsItsLayout(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)
		lk := b.lockKey("v1")
		l, err := lock.TryOnce(ctx, b, req("v1", "new", 1, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		m, err := b.c.HGetAll(ctx, lk).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"acquired_ms", "cmd", "host", "note", "owner", "pid", "token", "ttl_ms", "user"}
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
			t.Errorf("the mutex record's fields are %v, want %v", got, want)
		}
		if m["owner"] != "new" || m["token"] != strconv.FormatUint(l.Token(), 10) {
			t.Errorf("the mutex record names %q with token %s, want new with %d", m["owner"], m["token"], l.Token())
		}
		if n, _ := b.c.Exists(ctx, b.slotKey("v1", 0, 2)).Result(); n != 0 {
			t.Errorf("a mutex wrote a semaphore slot")
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}

		// A holder on an older build: its record, as its scripts wrote it.
		if err := b.c.HSet(ctx, lk, "owner", "old", "token", "7", "host", "h", "pid", "1", "user", "u",
			"cmd", "c", "note", "", "acquired_ms", "1", "ttl_ms", "5000").Err(); err != nil {
			t.Fatal(err)
		}
		b.c.PExpire(ctx, lk, 5*time.Second)
		var busy *lock.BusyError
		if _, err := lock.TryOnce(ctx, b, req("v1", "new", 1, 5*time.Second)); !errors.As(err, &busy) || busy.Holder.Owner != "old" {
			t.Fatalf("a mutex over an older build's holder: %v, want busy naming it", err)
		}
		var mismatch *lock.LimitMismatchError
		if _, err := lock.TryOnce(ctx, b, req("v1", "sem", 2, 5*time.Second)); !errors.As(err, &mismatch) || mismatch.Have != 1 {
			t.Fatalf("a semaphore over an older build's mutex: %v, want a limit mismatch with 1", err)
		}
		if _, err := b.Break(ctx, "v1", 8); !errors.As(err, &busy) {
			t.Fatalf("break with another token: %v, want busy", err)
		}
		if h, err := b.Break(ctx, "v1", 7); err != nil || h.Owner != "old" {
			t.Fatalf("break with its token: %+v %v", h, err)
		}
	})
}
