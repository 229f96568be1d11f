package lock

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// movingStore is a key's holders as a break sees them: each holder's
// place has a generation; a removal compares it with the one read, and a
// holder listed in moves moves (a new generation) just before the next
// removals of it, that many times.
type movingStore struct {
	held  []Holder
	gen   map[uint64]int
	moves map[uint64]int
	reads int
}

func (s *movingStore) read(context.Context) ([]Holder, func(int) (bool, error), error) {
	s.reads++
	held := slices.Clone(s.held)
	gens := map[uint64]int{}
	for _, h := range held {
		gens[h.Token] = s.gen[h.Token]
	}
	return held, func(i int) (bool, error) {
		t := held[i].Token
		if s.moves[t] > 0 { // a hold moved it since our read
			s.moves[t]--
			s.gen[t]++
		}
		if !slices.ContainsFunc(s.held, func(h Holder) bool { return h.Token == t }) {
			return false, nil // let go
		}
		if s.gen[t] != gens[t] {
			return false, ErrMoved
		}
		s.held = slices.DeleteFunc(s.held, func(h Holder) bool { return h.Token == t })
		return true, nil
	}, nil
}

func TestBreakAgainFollowsAMovedHolder(t *testing.T) {
	for _, c := range []struct {
		name      string
		held      []uint64
		moves     map[uint64]int
		token     uint64
		wantToken uint64
		wantErr   error
		wantLeft  []uint64
	}{
		{"not moved", []uint64{7}, nil, 7, 7, nil, nil},
		{"moved once", []uint64{7}, map[uint64]int{7: 1}, 7, 7, nil, nil},
		{"moved twice", []uint64{7}, map[uint64]int{7: 2}, 0, 7, nil, nil},
		{"every holder, one moved", []uint64{4, 9}, map[uint64]int{9: 1}, 0, 4, nil, nil},
		{"the moved one is the oldest", []uint64{4, 9}, map[uint64]int{4: 1}, 0, 4, nil, nil},
		{"keeps moving", []uint64{7}, map[uint64]int{7: 5}, 7, 0, ErrUnavailable, []uint64{7}},
		{"token names nobody", []uint64{7}, nil, 8, 7, ErrHeld, []uint64{7}},
		{"free", nil, nil, 0, 0, ErrNotHeld, nil},
	} {
		s := &movingStore{gen: map[uint64]int{}, moves: c.moves}
		for _, t := range c.held {
			s.held = append(s.held, Holder{Key: "k", Token: t})
		}
		got, err := BreakAgain(context.Background(), "k", c.token, s.read)
		if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) || got.Token != c.wantToken {
			t.Errorf("%s: BreakAgain = token %d, %v; want token %d, %v", c.name, got.Token, err, c.wantToken, c.wantErr)
		}
		if left := tokens(s.held); !slices.Equal(left, c.wantLeft) {
			t.Errorf("%s: holders left %v, want %v", c.name, left, c.wantLeft)
		}
	}
}

// A failure to read or remove ends the break at once.
func TestBreakAgainStopsOnFailure(t *testing.T) {
	boom := errors.New("boom")
	read := func(context.Context) ([]Holder, func(int) (bool, error), error) { return nil, nil, boom }
	if _, err := BreakAgain(context.Background(), "k", 0, read); !errors.Is(err, boom) {
		t.Fatalf("read failure: %v", err)
	}
	read = func(context.Context) ([]Holder, func(int) (bool, error), error) {
		return []Holder{{Key: "k", Token: 3}}, func(int) (bool, error) { return false, boom }, nil
	}
	if h, err := BreakAgain(context.Background(), "k", 0, read); !errors.Is(err, boom) || h.Token != 3 {
		t.Fatalf("remove failure: token %d, %v", h.Token, err)
	}
}

// A break of every holder that read a taker with no token yet, which
// took its token before the removal (its place changed: ErrMoved), breaks
// it in the next round: it holds now (ZooKeeper: the token's write
// changes the lock node's version).
func TestBreakAgainBreaksATakerThatTookItsToken(t *testing.T) {
	took, removed := false, false
	read := func(context.Context) ([]Holder, func(int) (bool, error), error) {
		h := Holder{Key: "k"}
		if took {
			h.Token = 7
		}
		return []Holder{h}, func(int) (bool, error) {
			if h.Token == 0 { // it writes its token between our read and this removal
				took = true
				return false, ErrMoved
			}
			removed = true
			return true, nil
		}, nil
	}
	got, err := BreakAgain(context.Background(), "k", 0, read)
	if err != nil || got.Token != 7 || !removed {
		t.Fatalf("BreakAgain = token %d, %v (removed %v); want the taker broken under token 7", got.Token, err, removed)
	}
}
