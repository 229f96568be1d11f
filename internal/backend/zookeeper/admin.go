package zookeeper

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// The backend's own session serves status, list, break, resume and
// doctor. A run needs it only until its contender has a session of its
// own (the lease), so it is closed then ("parked") and dialled again if
// anything asks for it later: a run holds one connection, not two. At a
// server's maxClientCnxns (60 per client IP by default) 70 runs started
// at once each held their first connection while waiting for a second,
// and 64 of them failed (issue 25).
type admin struct {
	mu    sync.Mutex
	s     *session // nil while parked
	users int
	park  bool // park once the last user is done
}

// parkWait bounds how long parking waits for the server to end the
// session (and so free its connection) before the contender dials.
const parkWait = 250 * time.Millisecond

// useAdmin returns the backend's own session, dialled again if it was
// parked, after checking that the keys a request is about are valid; the
// caller calls done once it no longer uses it.
func (b *Backend) useAdmin(ctx context.Context, keys ...string) (s *session, done func(), err error) {
	for _, key := range keys {
		if err := lock.ValidateKey(key); err != nil {
			return nil, func() {}, err
		}
	}
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	if b.adm.s == nil {
		if b.adm.s, err = b.dial(ctx, adminSession); err != nil {
			return nil, func() {}, err
		}
	}
	b.adm.users++
	b.adm.park = false
	var once sync.Once
	return b.adm.s, func() { once.Do(b.doneAdmin) }, nil
}

func (b *Backend) doneAdmin() {
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	b.adm.users--
	if b.adm.users == 0 && b.adm.park {
		b.closeAdminLocked(parkWait)
	}
}

// parkAdmin closes the backend's own session now, or once its last user
// is done.
func (b *Backend) parkAdmin() {
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	if b.adm.users > 0 {
		b.adm.park = true
		return
	}
	b.closeAdminLocked(parkWait)
}

func (b *Backend) closeAdminLocked(wait time.Duration) {
	if b.adm.s != nil {
		b.adm.s.close(wait)
		b.adm.s, b.adm.park = nil, false
	}
}

// pinnedAdmin is the backend's own session for a lease resumed from a
// hold, which has no session of its own: Resume keeps it in use, so it is
// never parked.
func (b *Backend) pinnedAdmin() *session {
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	return b.adm.s
}

// useBrief is useAdmin for a call that must not keep a second connection
// open for the rest of a run (the run ledger's, made by a run that holds
// its lock on a session of its own): while the backend's own session is
// parked it dials a session for this call alone, closed once done.
func (b *Backend) useBrief(ctx context.Context) (s *session, done func(), err error) {
	b.adm.mu.Lock()
	parked := b.adm.s == nil
	b.adm.mu.Unlock()
	if !parked {
		return b.useAdmin(ctx)
	}
	if s, err = b.dial(ctx, adminSession); err != nil {
		return nil, func() {}, err
	}
	return s, func() { s.close(parkWait) }, nil
}
