package lock

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func h(key string, token uint64) Holder { return Holder{Key: key, Token: token, Owner: "o"} }

func tokens(hs []Holder) []uint64 {
	var out []uint64
	for _, h := range hs {
		out = append(out, h.Token)
	}
	return out
}

func TestOldestLowestTokenUnreadLast(t *testing.T) {
	for _, c := range []struct {
		hs   []Holder
		want uint64
	}{
		{[]Holder{h("k", 7)}, 7},
		{[]Holder{h("k", 9), h("k", 3), h("k", 5)}, 3},
		{[]Holder{h("k", 0), h("k", 8), h("k", 4)}, 4}, // token 0: no record read
		{[]Holder{h("k", 0), h("k", 0)}, 0},
	} {
		if got := Oldest(c.hs).Token; got != c.want {
			t.Errorf("Oldest(%v) = token %d, want %d", tokens(c.hs), got, c.want)
		}
	}
}

func TestRefuse(t *testing.T) {
	mutex := SeenLimit{Have: 1}
	three := SeenLimit{Have: 3}
	bound := func(slot int) SeenLimit { return SeenLimit{Have: max(2, slot+1), Bound: true} }
	for _, c := range []struct {
		name     string
		want     int
		limits   []SeenLimit
		full     bool
		mismatch int // the Have named; 0: no mismatch
		busy     bool
	}{
		{"free key", 3, nil, false, 0, false},
		{"same limit, a slot free", 3, []SeenLimit{three}, false, 0, false},
		{"same limit, full", 3, []SeenLimit{three, three, three}, true, 0, true},
		{"mutex held, mutex asked", 1, []SeenLimit{mutex}, true, 0, true},
		{"mutex held, semaphore asked", 3, []SeenLimit{mutex}, false, 1, false},
		{"semaphore held, mutex asked", 1, []SeenLimit{three}, true, 3, false},
		{"other limit stated", 2, []SeenLimit{three}, false, 3, false},
		{"mismatch before busy", 2, []SeenLimit{{Have: 2}, three}, true, 3, false},
		{"bound below the slots asked", 4, []SeenLimit{bound(1)}, false, 0, false},
		{"bound within, full", 2, []SeenLimit{bound(1)}, true, 0, true},
		{"bound beyond the slots asked", 3, []SeenLimit{bound(4)}, false, 5, false},
		{"bound refutes a mutex", 1, []SeenLimit{bound(0)}, false, 2, false},
	} {
		held := make([]Holder, len(c.limits))
		for i := range held {
			held[i] = h("k", uint64(10-i)) // the last is the oldest
		}
		err := Refuse("k", c.want, held, c.limits, c.full)
		var lm *LimitMismatchError
		var busy *BusyError
		switch {
		case c.mismatch != 0:
			if !errors.As(err, &lm) || lm.Have != c.mismatch || lm.Want != c.want || lm.Key != "k" {
				t.Errorf("%s: %v, want a limit mismatch naming %d", c.name, err, c.mismatch)
			}
		case c.busy:
			if !errors.As(err, &busy) || busy.Holder.Token != held[len(held)-1].Token {
				t.Errorf("%s: %v, want busy naming the oldest holder", c.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		}
	}
}

func TestBreakHolders(t *testing.T) {
	for _, c := range []struct {
		name    string
		held    []uint64
		token   uint64
		gone    map[uint64]bool // let go before their removal
		removed []uint64        // the removals tried, in order
		want    uint64          // the holder answered
		err     string          // "": nil; "busy"; "free"
	}{
		{"free key", nil, 0, nil, nil, 0, "free"},
		{"free key, a token", nil, 5, nil, nil, 0, "free"},
		{"mutex", []uint64{5}, 0, nil, []uint64{5}, 5, ""},
		{"every holder, oldest answered", []uint64{8, 4, 6}, 0, nil, []uint64{8, 4, 6}, 4, ""},
		{"by token", []uint64{8, 4, 6}, 6, nil, []uint64{6}, 6, ""},
		{"token of nobody", []uint64{8, 4, 6}, 7, nil, nil, 4, "busy"},
		{"token holder let go, others stay", []uint64{8, 4, 6}, 6, map[uint64]bool{6: true}, []uint64{6}, 4, "busy"},
		{"every holder let go", []uint64{8, 4}, 0, map[uint64]bool{8: true, 4: true}, []uint64{8, 4}, 0, "free"},
		{"some let go", []uint64{8, 4}, 0, map[uint64]bool{4: true}, []uint64{8, 4}, 8, ""},
		{"unread holder broken with token 0", []uint64{0, 9}, 0, nil, []uint64{0, 9}, 9, ""},
		{"unread holder left alone by a token", []uint64{0, 9}, 9, nil, []uint64{9}, 9, ""},
	} {
		held := make([]Holder, len(c.held))
		for i, tok := range c.held {
			held[i] = h("k", tok)
		}
		var tried []uint64
		got, err := BreakHolders("k", held, c.token, func(i int) (bool, error) {
			tried = append(tried, held[i].Token)
			return !c.gone[held[i].Token], nil
		})
		if !reflect.DeepEqual(tried, c.removed) {
			t.Errorf("%s: removals %v, want %v", c.name, tried, c.removed)
		}
		var busy *BusyError
		switch c.err {
		case "":
			if err != nil || got.Token != c.want {
				t.Errorf("%s: %d, %v; want %d, nil", c.name, got.Token, err, c.want)
			}
		case "busy":
			if !errors.As(err, &busy) || busy.Holder.Token != c.want || got.Token != c.want {
				t.Errorf("%s: %d, %v; want busy naming %d", c.name, got.Token, err, c.want)
			}
		case "free":
			if !errors.Is(err, ErrNotHeld) || errors.As(err, &busy) || err.Error() != "k: lock is not held" {
				t.Errorf("%s: %v, want k: ErrNotHeld", c.name, err)
			}
		}
	}
}

func TestBreakHoldersStopsAtAFailedRemoval(t *testing.T) {
	boom := errors.New("boom")
	held := []Holder{h("k", 3), h("k", 4), h("k", 5)}
	var tried int
	got, err := BreakHolders("k", held, 0, func(i int) (bool, error) {
		tried++
		if i == 1 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) || got.Token != 4 || tried != 2 {
		t.Fatalf("%d, %v after %d removals; want holder 4, boom, after 2", got.Token, err, tried)
	}
}

func TestListInspected(t *testing.T) {
	held := map[string]Holder{"job:1": h("job:1", 1), "job:2": h("job:2", 2), "other": h("other", 3), "bad\x00": h("bad\x00", 4)}
	var asked []string
	inspect := func(ctx context.Context, key string) (Holder, bool, error) {
		asked = append(asked, key)
		x, ok := held[key]
		return x, ok, nil
	}
	got, err := ListInspected(context.Background(), "job", []string{"job:2", "job:9", "other", "job:1", "job:2", "bad\x00"}, inspect)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tokens(got), []uint64{1, 2}) {
		t.Errorf("listed %v, want job:1 then job:2", got)
	}
	if want := []string{"job:2", "job:9", "job:1"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("inspected %q, want %q (once each, within the prefix)", asked, want)
	}

	boom := errors.New("boom")
	if _, err := ListInspected(context.Background(), "", []string{"a"}, func(context.Context, string) (Holder, bool, error) {
		return Holder{}, false, boom
	}); !errors.Is(err, boom) {
		t.Errorf("a failed inspection: %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ListInspected(ctx, "", []string{"job:1"}, inspect); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context: %v, want context.Canceled", err)
	}
}

func TestListOldest(t *testing.T) {
	hs := []Holder{h("b", 9), h("a", 7), h("b", 4), h("c", 2), h("b", 6), h("ab", 1), h("bad\x00", 3)}
	got := ListOldest("", hs)
	if keys, toks := keysOf(got), tokens(got); !reflect.DeepEqual(keys, []string{"a", "ab", "b", "c"}) || !reflect.DeepEqual(toks, []uint64{7, 1, 4, 2}) {
		t.Errorf("ListOldest = %q %v, want a ab b c, each by its oldest holder", keys, toks)
	}
	if got := keysOf(ListOldest("a", hs)); !reflect.DeepEqual(got, []string{"a", "ab"}) {
		t.Errorf("ListOldest(a) = %q", got)
	}
	if got := ListOldest("z", hs); got != nil {
		t.Errorf("nothing under z: %v, want nil", got)
	}
}

func keysOf(hs []Holder) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key)
	}
	return out
}
