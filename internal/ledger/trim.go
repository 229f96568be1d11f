package ledger

// MinDoneSlots is how many done slots a key's ledger remembers at least,
// whatever --history: the successful run of each of the last
// max(MinDoneSlots, --history) slots that succeeded is never trimmed, so
// such a slot stays done however many runs (skipped ones above all) come
// after it.
const MinDoneSlots = 100

// trimmed is what a trim deletes of ids (the key's runs, this one's
// included, oldest first; raw holds their entries): every run older than
// the newest bound, except the newest success of each of the last
// max(bound, MinDoneSlots) slots that succeeded. Only when there are more
// than bound runs are the entries decoded.
func trimmed(raw map[string][]byte, ids []string, bound int) []string {
	if len(ids) <= bound {
		return nil
	}
	done := doneRuns(raw, ids, max(bound, MinDoneSlots))
	var old []string
	for _, id := range ids[:len(ids)-bound] {
		if !done[id] {
			old = append(old, id)
		}
	}
	return old
}

// doneRuns are the ids of the newest successful run of each of the last
// n slots that succeeded, by the runs' starts.
func doneRuns(raw map[string][]byte, ids []string, n int) map[string]bool {
	done, slots := map[string]bool{}, map[string]bool{}
	for i := len(ids) - 1; i >= 0 && len(slots) < n; i-- {
		e, ok := decode(raw[ids[i]])
		if !ok || e.Outcome != OK || e.Slot == "" || slots[e.Slot] {
			continue
		}
		slots[e.Slot], done[ids[i]] = true, true
	}
	return done
}
