package main

import (
	"slices"
)

// verdict is what the checker found in one row's history.
type verdict struct {
	Sections         int `json:"sections"`
	Overlaps         int `json:"overlaps"`
	TokenRegressions int `json:"token_regressions"`
	StaleWrites      int `json:"stale_writes_accepted"`
	RejectedWrites   int `json:"rejected_writes"`
}

// byStart returns the sections sorted by start (ties by token).
func byStart(ss []section) []section {
	s := slices.Clone(ss)
	slices.SortFunc(s, func(a, b section) int {
		if a.Start != b.Start {
			return cmp64(a.Start, b.Start)
		}
		return cmp64(int64(a.Token), int64(b.Token))
	})
	return s
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// overlaps counts, with limit holders allowed at once, the sections that
// started while limit others were inside: for a mutex (limit 1), every
// pair of sections that intersect.
func overlaps(ss []section, limit int) int {
	s := byStart(ss)
	n := 0
	for i := range s {
		inside := 0
		for j := 0; j < i; j++ {
			if s[j].End > s[i].Start {
				inside++
			}
		}
		if inside >= limit {
			n++
		}
	}
	return n
}

// tokenRegressions for a mutex counts the sections (in the order they
// started) whose token is not greater than the one before. For a
// semaphore, whose holders start their sections in any order, it counts
// the sections whose token is not greater than that of a section that
// had ended before their distlock was even launched (that one was
// granted first, whatever the start order).
func tokenRegressions(ss []section, limit int) int {
	s := byStart(ss)
	n := 0
	for i := 1; i < len(s); i++ {
		if limit == 1 {
			if s[i].Token <= s[i-1].Token {
				n++
			}
			continue
		}
		for j := 0; j < i; j++ {
			if s[j].End < s[i].Launched && s[j].Token >= s[i].Token {
				n++
				break
			}
		}
	}
	return n
}

// staleWrites counts the writes the register accepted from a section
// after it had been written to by a section that started later: the
// newer holder had shown the register its token, yet the older one's
// token still let a write through (its token did not rise above the
// newer one's). ws is in the register's order (it appends under its
// lock). A write of the older holder that reaches the register before
// the newer holder's first write is not counted: the register cannot
// know of a token it has not seen, and that write is ordered before
// every write of the newer holder, which is what fencing promises (the
// overlap itself is counted by overlaps). Mutex only.
func staleWrites(ss []section, ws []write) int {
	starts := make(map[int]int64, len(ss))
	for _, s := range ss {
		starts[s.ID] = s.Start
	}
	seen := map[int]bool{} // sections that have written so far
	n := 0
	for _, w := range ws {
		if w.OK {
			for id := range seen {
				if id != w.Section && starts[id] > starts[w.Section] {
					n++
					break
				}
			}
		}
		seen[w.Section] = true
	}
	return n
}

// check judges one row's history.
func check(ss []section, ws []write, limit int) verdict {
	v := verdict{
		Sections:         len(ss),
		Overlaps:         overlaps(ss, limit),
		TokenRegressions: tokenRegressions(ss, limit),
	}
	if limit == 1 {
		v.StaleWrites = staleWrites(ss, ws)
	}
	for _, w := range ws {
		if !w.OK {
			v.RejectedWrites++
		}
	}
	return v
}
