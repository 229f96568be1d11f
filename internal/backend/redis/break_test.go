package redis

import (
	"errors"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// breakHolders leaves alone a holder whose owner-checked release says it
// is no longer there (it let go, or another took its slot, since it was
// read): not reported as broken.
func TestBreakHoldersNotOurs(t *testing.T) {
	held := []lock.Holder{{Key: "k", Owner: "a", Token: 5}, {Key: "k", Owner: "b", Token: 7}}
	gone := func(h lock.Holder) error {
		if h.Owner == "a" {
			return lock.ErrNotHeld
		}
		return nil
	}
	h, err := breakHolders("k", held, nil, 0, gone)
	if err != nil || h.Owner != "b" {
		t.Fatalf("break with a holder gone meanwhile: %+v, %v; want b broken", h, err)
	}
	if _, err := breakHolders("k", held[:1], nil, 5, gone); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("break of a holder gone meanwhile: %v, want ErrNotHeld", err)
	}
	failed := errors.New("unreachable")
	if h, err := breakHolders("k", held, nil, 7, func(lock.Holder) error { return failed }); !errors.Is(err, failed) || h.Owner != "b" {
		t.Fatalf("failed release: %+v, %v; want b and the failure", h, err)
	}
	if _, err := breakHolders("k", nil, failed, 0, gone); !errors.Is(err, failed) {
		t.Fatalf("failed read: %v, want it passed on", err)
	}
}
