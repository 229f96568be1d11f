package file

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Release and Hold let the flocks go before they give the key's record
// lock back (whileOurs): whoever holds the record lock sees the record
// and the flocks agree, the record gone (Release) or keeping a hold (Hold)
// only with the flock free. A checker, on files of its own (its own open
// file descriptions: as another process), watches the record without
// locking; once it is changed it takes the record lock as soon as it is
// free and looks at the flock. The window it hunts (the record changed,
// the record lock given back, the flock not let go yet) opens only if
// letGo runs after the record lock's release, and then only for a few
// system calls: the test repeats the end many times, within stressBudget,
// and fails on the first sighting.
func TestLetGoUnderTheRecordLock(t *testing.T) {
	release := func(l lock.Lease) error { return l.Release(context.Background()) }
	hold := func(l lock.Lease) error {
		return l.(*lock.Held).Hold(context.Background(), time.Millisecond, lock.HoldMinHold)
	}
	ends := []struct {
		name  string
		end   func(l lock.Lease) error
		after func(m meta, ok bool) bool // the record as the end leaves it
	}{
		{"release", release, func(_ meta, ok bool) bool { return !ok }},
		{"hold", hold, func(m meta, ok bool) bool { return ok && m.Hold != "" }},
	}
	b := raceDir(t)
	p := b.keyPaths("race")
	deadline := time.Now().Add(stressBudget)
	for _, e := range ends {
		for i := 0; i < 300 && time.Now().Before(deadline); i++ {
			l := acquireSoon(t, b, raceRequest("holder", 1))
			recLock, err := openLock(p.recLock(), true)
			if err != nil {
				t.Fatal(err)
			}
			keyLock, err := openLock(p.lock(), false)
			if err != nil {
				t.Fatal(err)
			}
			seen := make(chan string, 1)
			go func() { seen <- watchEnd(recLock, keyLock, p.record(), e.after, time.Now().Add(5*time.Second)) }()
			err = e.end(l)
			why := <-seen
			recLock.Close()
			keyLock.Close()
			if err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			if why != "" {
				t.Fatalf("%s, round %d: %s", e.name, i, why)
			}
			os.Remove(p.record()) // a hold's: the next round acquires afresh
		}
	}
}

// watchEnd waits, without locking, until the record at path is as the end
// leaves it (after), then takes the record lock (recLock) as soon as it is
// free and, holding it, says what is wrong when the key's flock (keyLock)
// is still held; "" when it is free. It gives up at deadline.
func watchEnd(recLock, keyLock *os.File, path string, after func(meta, bool) bool, deadline time.Time) string {
	for {
		if m, ok, _ := readMeta(path); after(m, ok) {
			break
		}
		if time.Now().After(deadline) {
			return "the record was never changed"
		}
	}
	for {
		if taken, _ := tryFlock(recLock, syscall.LOCK_EX); taken {
			break
		}
		if time.Now().After(deadline) {
			return "the record lock stayed taken"
		}
	}
	defer syscall.Flock(int(recLock.Fd()), syscall.LOCK_UN)
	if free, _ := tryFlock(keyLock, syscall.LOCK_SH); !free {
		return "under the record lock, the record is changed while the flock is still held"
	}
	syscall.Flock(int(keyLock.Fd()), syscall.LOCK_UN)
	return ""
}
