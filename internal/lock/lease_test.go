package lock

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// holdStore is a LeaseStore for the plumbing of Held alone (its engines'
// own behaviour is tested against memstore and every engine's suite): its
// Hold answers err or the TTL asked for, doubled.
type holdStore struct{ err error }

func (s *holdStore) Renew(ctx context.Context, l *Held) error   { return s.err }
func (s *holdStore) Release(ctx context.Context, l *Held) error { return s.err }
func (s *holdStore) Hold(ctx context.Context, l *Held, d time.Duration, mode string) (time.Duration, error) {
	return 2 * d, s.err
}

type idStore struct{ *holdStore }

func (idStore) LeaseID() int64 { return 77 }

type alertStore struct {
	*holdStore
	ch chan struct{}
}

func (s alertStore) Alerts() <-chan struct{} { return s.ch }

type fileStore struct {
	*holdStore
	files []*os.File
}

func (s fileStore) LockFiles() []*os.File { return s.files }

var testGrant = Grant{Key: "k", Owner: "o", Token: 9, TTL: 30 * time.Second, Granted: time.Unix(5, 0), Slot: -1, Limit: 1}

// Hold sets the TTL the handle names to the store's answer, and only when
// the hold succeeded.
func TestHeldHoldSetsTheHandlesTTL(t *testing.T) {
	ctx := context.Background()
	s := &holdStore{err: ErrNotHeld}
	l := NewLease(testGrant, s)
	if err := l.Hold(ctx, time.Minute, HoldHandle); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Hold = %v, want the store's error", err)
	}
	if got := l.Handle().TTL(); got != 30*time.Second {
		t.Errorf("after a failed hold the handle names %v, want 30s", got)
	}
	s.err = nil
	if err := l.Hold(ctx, time.Minute, HoldHandle); err != nil {
		t.Fatal(err)
	}
	if got := l.Handle().TTL(); got != 2*time.Minute {
		t.Errorf("after a hold the handle names %v, want the store's 2m", got)
	}
}

// The handle of a Held is the one every engine wrote before it: pinned
// here, so that a handle printed by an older distlock still resumes.
func TestHeldHandleFormat(t *testing.T) {
	const mutex = "eyJrIjoiayIsIm8iOiJvIiwidCI6OSwidHRsIjozMDAwMH0"
	const etcd = "eyJrIjoiayIsIm8iOiJvIiwidCI6OSwidHRsIjozMDAwMCwibCI6Nzd9"
	if got := NewLease(testGrant, &holdStore{}).Handle().Encode(); got != mutex {
		t.Errorf("handle %s, want %s", got, mutex)
	}
	if got := NewLease(testGrant, idStore{&holdStore{}}).Handle().Encode(); got != etcd {
		t.Errorf("handle with a lease id %s, want %s", got, etcd)
	}
}

// The optional extras come from the store, and only from a store that
// has them.
func TestHeldExtrasComeFromTheStore(t *testing.T) {
	plain := NewLease(testGrant, &holdStore{})
	if files := plain.(FileLocked).LockFiles(); files != nil || plain.Alerts() != nil || plain.Handle().LeaseID != 0 {
		t.Errorf("a plain store's lease: LockFiles %v, Alerts %v, LeaseID %d", files, plain.Alerts(), plain.Handle().LeaseID)
	}
	if sl, ok := plain.(Slotted); !ok || sl.Slot() != -1 {
		t.Errorf("Slot is not the grant's: %v", ok)
	}
	ch := make(chan struct{})
	if got := NewLease(testGrant, alertStore{&holdStore{}, ch}).Alerts(); got != (<-chan struct{})(ch) {
		t.Error("Alerts is not the store's channel")
	}
	files := []*os.File{os.Stdin}
	fl, ok := NewLease(testGrant, fileStore{&holdStore{}, files}).(FileLocked)
	if !ok || len(fl.LockFiles()) != 1 || fl.LockFiles()[0] != os.Stdin {
		t.Errorf("a file store's lease: FileLocked %v", ok)
	}
	st := &holdStore{}
	if StoreOf(NewLease(testGrant, st)) != st || StoreOf(fl.(Lease)) == nil {
		t.Error("StoreOf does not give the store")
	}
	l := NewLease(testGrant, st)
	if l.Key() != "k" || l.Owner() != "o" || l.Token() != 9 || !l.Granted().Equal(time.Unix(5, 0)) {
		t.Errorf("accessors: %q %q %d %v", l.Key(), l.Owner(), l.Token(), l.Granted())
	}
}
