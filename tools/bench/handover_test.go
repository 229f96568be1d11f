package main

import "testing"

// Three contenders, one section each after a first holder: B and C are
// launched while A holds; A hands over to B (C waits across it), B to C.
// D is launched after B's child ended: it waits across no handover.
func TestWaitersCountsRunsLaunchedBeforeAHandoverThatStartAfterIt(t *testing.T) {
	c := contention{
		sections: []section{
			{contender: 0, run: 0, start: 100, end: 200}, // A
			{contender: 1, run: 0, start: 210, end: 300}, // B
			{contender: 2, run: 0, start: 310, end: 400}, // C
			{contender: 3, run: 0, start: 410, end: 500}, // D
		},
		launched: [][]int64{{0}, {50}, {60}, {305}},
	}
	// Handover A→B: C and D are later; C launched at 60 < 200 waits, D
	// (305) does not. B→C: D launched at 305 > 300: no. C→D: nobody after D.
	if h, r := c.waiters(); h != 1 || r != 1 {
		t.Fatalf("waiters() = %d waiter-handovers, %d waiting runs; want 1, 1", h, r)
	}
	c.launched[3][0] = 150 // D launched while A held: waits across A→B and B→C
	if h, r := c.waiters(); h != 3 || r != 2 {
		t.Fatalf("waiters() = %d waiter-handovers, %d waiting runs; want 3, 2", h, r)
	}
}
