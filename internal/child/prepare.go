package child

import (
	"os"
	"sync"
)

// Prepared is a group watcher forked ahead of the lock (Linux on amd64
// and arm64: fork_linux.go), so that its fork, its pin's and the ready
// handshake are not on the way from "acquired" to "command started": a
// waiter forks it while it waits. Start takes it (Spec's Watcher) and
// hands it the lock files; Drop lets it go if the lock is never had.
type Prepared struct {
	mu      sync.Mutex
	ready   chan struct{} // closed once the fork has been tried
	done    bool          // w is set (nil if the fork failed)
	w       *watcher
	taken   bool
	dropped bool
}

// PrepareWatcher starts forking the group watcher on a goroutine of its
// own and returns at once. nil where the watcher cannot be forked ahead
// (Start then starts one as it always did).
func PrepareWatcher() *Prepared {
	if !forkAhead || !watcherLeads {
		return nil
	}
	// Before the watcher exists: a pin orphaned by a dying watcher is
	// ours to reap.
	prepareReaping()
	pw := &Prepared{ready: make(chan struct{})}
	go func() {
		w, _ := startWatcherFork() // a failure falls back in groupWatcher
		pw.mu.Lock()
		pw.w, pw.done = w, true
		drop := pw.dropped
		pw.mu.Unlock()
		close(pw.ready)
		if drop {
			w.release()
		}
	}()
	return pw
}

// take waits for the fork and returns the watcher (nil if it could not
// be forked, or was let go, or pw is nil).
func (pw *Prepared) take() *watcher {
	if pw == nil {
		return nil
	}
	<-pw.ready
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.taken || pw.dropped {
		return nil
	}
	pw.taken = true
	return pw.w
}

// Drop lets the prepared watcher go (a goodbye: it exits, and so does its
// pin) unless Start has taken it; safe on nil and more than once. It
// waits neither for the fork to finish nor for the watcher to be reaped:
// the answer that the lock was not had (the wait timed out, an interrupt)
// is not delayed. Should distlock exit before the goodbye
// is said, the watcher sees its socket close and ends its empty group
// (the pin alone) before exiting.
func (pw *Prepared) Drop() {
	if pw == nil {
		return
	}
	pw.mu.Lock()
	if pw.taken || pw.dropped {
		pw.mu.Unlock()
		return
	}
	pw.dropped = true
	var w *watcher
	if pw.done {
		w = pw.w
	}
	pw.mu.Unlock()
	w.release() // nil: the forking goroutine lets it go when it is done
}

// groupWatcher is the watcher that makes the command's group (Linux),
// holding keep: the one prepared ahead (pre), handed the files; failing
// that (it could not be forked, or is gone), one forked now, handed the
// files; failing that too (a full fork refused for memory under strict
// overcommit, where an exec would pass), distlock re-executed as the
// watcher, given the files as it starts (startWatcher), with the same
// guarantees.
func groupWatcher(pre *Prepared, keep []*os.File) (*watcher, error) {
	handed := func(w *watcher) bool {
		if w == nil {
			return false
		}
		if err := w.hand(keep); err != nil {
			w.release()
			return false
		}
		return true
	}
	if w := pre.take(); handed(w) {
		return w, nil
	}
	if forkAhead {
		if w, err := startWatcherFork(); err == nil && handed(w) {
			return w, nil
		}
	}
	return startWatcher(0, keep)
}
