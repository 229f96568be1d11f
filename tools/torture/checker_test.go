package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
)

// sec is a hand-made section: contender c, token tok, inside [start, end].
func sec(id, c int, tok uint64, start, end int64) section {
	return section{ID: id, Contender: c, Token: tok, Launched: start - 1, Start: start, End: end, Clean: true}
}

func TestOverlapsMutex(t *testing.T) {
	clean := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 11, 20), sec(2, 2, 3, 21, 30)}
	if n := overlaps(clean, 1); n != 0 {
		t.Errorf("back-to-back sections: %d overlaps, want 0", n)
	}
	bad := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 5, 20), sec(2, 2, 3, 21, 30)}
	if n := overlaps(bad, 1); n != 1 {
		t.Errorf("one intersecting pair: %d overlaps, want 1", n)
	}
}

func TestOverlapsSemaphore(t *testing.T) {
	two := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 5, 20), sec(2, 2, 3, 11, 30)}
	if n := overlaps(two, 2); n != 0 {
		t.Errorf("never more than 2 inside: %d, want 0", n)
	}
	three := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 5, 20), sec(2, 2, 3, 8, 30)}
	if n := overlaps(three, 2); n != 1 {
		t.Errorf("3 inside at t=8: %d, want 1", n)
	}
}

func TestTokenRegressions(t *testing.T) {
	rising := []section{sec(0, 0, 5, 0, 10), sec(1, 1, 9, 11, 20), sec(2, 2, 10, 21, 30)}
	if n := tokenRegressions(rising, 1); n != 0 {
		t.Errorf("rising: %d, want 0", n)
	}
	// after a wipe the engine starts counting again
	falling := []section{sec(0, 0, 500, 0, 10), sec(1, 1, 3, 11, 20), sec(2, 2, 4, 21, 30), sec(3, 0, 4, 31, 40)}
	if n := tokenRegressions(falling, 1); n != 2 {
		t.Errorf("500, 3, 4, 4: %d regressions, want 2", n)
	}
	// semaphore holders start in any order: only a section that ended
	// before another started bounds its token
	sem := []section{sec(0, 0, 2, 0, 10), sec(1, 1, 1, 1, 10), sec(2, 2, 3, 11, 20)}
	if n := tokenRegressions(sem, 2); n != 0 {
		t.Errorf("semaphore, concurrent grants in either order: %d, want 0", n)
	}
	// granted before an earlier-token section ended, started after it
	late := sec(3, 1, 4, 25, 26)
	late.Launched = 12
	if n := tokenRegressions(append(sem, sec(4, 0, 5, 13, 24), late), 2); n != 0 {
		t.Errorf("semaphore, section launched before the other ended: %d, want 0", n)
	}
	sem = append(sem, sec(3, 0, 2, 21, 30))
	if n := tokenRegressions(sem, 2); n != 1 {
		t.Errorf("semaphore, token 2 after token 3 ended: %d, want 1", n)
	}
}

func TestStaleWrites(t *testing.T) {
	ss := []section{sec(0, 0, 10, 0, 50), sec(1, 1, 5, 20, 30)}
	ws := []write{
		{Section: 0, Token: 10, Call: 1, Return: 2, OK: true},   // before the other started: fine
		{Section: 1, Token: 5, Call: 21, Return: 22, OK: false}, // the new holder's lower token is refused
		{Section: 0, Token: 10, Call: 40, Return: 41, OK: true}, // the old holder, after the new one started
	}
	if n := staleWrites(ss, ws); n != 1 {
		t.Errorf("%d stale writes accepted, want 1", n)
	}
	v := check(ss, ws, 1)
	if v.Overlaps != 1 || v.TokenRegressions != 1 || v.StaleWrites != 1 || v.RejectedWrites != 1 {
		t.Errorf("check: %+v", v)
	}
}

// A write of the older holder that the register takes before the newer
// holder's first write is ordered before all of the newer one's writes:
// not stale. One after the newer holder's write is, even with an equal
// token (the register accepts a token equal to its highest).
func TestStaleWritesCountFromTheNewerHoldersFirstWrite(t *testing.T) {
	ss := []section{sec(0, 0, 7, 0, 50), sec(1, 1, 7, 20, 30)}
	early := []write{
		{Section: 0, Token: 7, Call: 1, Return: 2, OK: true},
		{Section: 0, Token: 7, Call: 21, Return: 22, OK: true}, // the newer one started at 20, has not written yet
		{Section: 1, Token: 7, Call: 23, Return: 24, OK: true},
	}
	if n := staleWrites(ss, early); n != 0 {
		t.Errorf("write before the newer holder's first: %d stale, want 0", n)
	}
	late := append(early, write{Section: 0, Token: 7, Call: 25, Return: 26, OK: true})
	if n := staleWrites(ss, late); n != 1 {
		t.Errorf("equal token after the newer holder's write: %d stale, want 1", n)
	}
}

func TestRegisterModel(t *testing.T) {
	ok := []write{{Section: 0, Token: 3, Call: 0, Return: 1, OK: true}, {Section: 1, Token: 2, Call: 2, Return: 3, OK: false}, {Section: 1, Token: 3, Call: 4, Return: 5, OK: true}}
	if !porcupine.CheckOperations(registerModel, registerOps(ok, nil)) {
		t.Error("a correct fenced register is not linearizable")
	}
	// a register that accepted a lower token after a higher one
	bad := []write{{Section: 0, Token: 3, Call: 0, Return: 1, OK: true}, {Section: 1, Token: 2, Call: 2, Return: 3, OK: true}}
	if porcupine.CheckOperations(registerModel, registerOps(bad, nil)) {
		t.Error("accepting 2 after 3 passed")
	}
	// concurrent writes may take effect in either order
	conc := []write{{Section: 0, Token: 3, Call: 0, Return: 10, OK: true}, {Section: 1, Token: 2, Call: 1, Return: 9, OK: true}}
	if !porcupine.CheckOperations(registerModel, registerOps(conc, nil)) {
		t.Error("concurrent writes 2 then 3 rejected")
	}
}

func TestLockModelAndVisualization(t *testing.T) {
	clean := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 11, 20)}
	if !porcupine.CheckOperations(lockModel(1), lockOps(clean)) {
		t.Error("back-to-back sections not linearizable")
	}
	dir := t.TempDir()
	bad := []section{sec(0, 0, 1, 0, 10), sec(1, 1, 2, 5, 20)}
	verdict, err := linearizable(lockModel(1), lockOps(bad), dir, "sections", false)
	if err != nil || verdict != "illegal" {
		t.Fatalf("overlapping sections: %q, %v; want illegal", verdict, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sections.html")); err != nil {
		t.Errorf("no visualization: %v", err)
	}
	if !porcupine.CheckOperations(lockModel(2), lockOps(bad)) {
		t.Error("two sections at once under --limit 2 not linearizable")
	}
}

func TestUnexpected(t *testing.T) {
	r := row{Overlaps: 3, TokenRegressions: 1}
	got := unexpected(r, expect("etcd", "wipe-server", "mutex"))
	if len(got) != 1 || got[0] != propToken {
		t.Errorf("etcd wipe-server: %v, want only %s", got, propToken)
	}
	for _, mode := range []string{"mutex", "handle"} {
		if got := unexpected(r, expect("redlock", "wipe-server", mode)); len(got) != 2 {
			t.Errorf("redlock wipe-server (one master), %s, must stay safe: %v", mode, got)
		}
	}
	if got := unexpected(r, expect("redis", "pause-server", "handle")); len(got) != 1 || got[0] != propToken {
		t.Errorf("redis pause-server handle: %v, want only %s", got, propToken)
	}
}
