package redis

// A Redlock lease's store (redlockStore): its renewals and holds run
// redlock_renew.lua on every master, and one rule judges the answers,
// above all when a master lost its data since the grant.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// redlockStore is the lock.LeaseStore of a lock held on a quorum of the
// masters.
type redlockStore struct {
	r *Redlock
	// fields are the record's other fields (recordFields), written when
	// a renewal takes the key back on a master that lost it.
	fields []any
	mu     sync.Mutex
	// known[k]: master k held our record as far as this lease has seen
	// since that master last lost its data: it granted and took the
	// written-back token (or named us when the lease was resumed), or
	// renewed our record, or had it re-created. A "lost" answer clears
	// it (nothing of ours is there since the loss). mayTakeBack reads it.
	known []bool
}

// newRedlockStore is the store of a lease over r's masters, none known
// to hold our record yet.
func newRedlockStore(r *Redlock, fields []any) *redlockStore {
	return &redlockStore{r: r, fields: fields, known: make([]bool, len(r.nodes))}
}

// The answers of redlock_renew.lua on one master.
const (
	rlAnother   int64 = 0 // the key is another holder's
	rlRenewed   int64 = 1 // our record, as it stood, renewed
	rlTakenBack int64 = 2 // free because the master lost its data since the grant: our record re-created
	rlLost      int64 = 3 // as rlTakenBack, but not taken back (not asked to)
	rlFree      int64 = 4 // free, and the master kept its data since the grant (released, broken, expired, or never ours here)
)

// Renew implements lock.LeaseStore: a quorum must extend it (extend).
func (s *redlockStore) Renew(ctx context.Context, l *lock.Held) error {
	return s.extend(ctx, l, l.TTL(), "", nodeTimeout(l.TTL()), "renewed "+l.Key())
}

// Hold implements lock.LeaseStore: a quorum must keep it (extend, with
// mode).
func (s *redlockStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	return d, s.extend(ctx, l, d, mode, 5*time.Second, "kept "+l.Key())
}

// Release implements lock.LeaseStore: on every master.
func (s *redlockStore) Release(ctx context.Context, l *lock.Held) error {
	if errs := s.r.releaseEach(ctx, l.Key(), l.Owner(), true); !slices.Contains(errs, nil) {
		return s.r.quorumOf(errs, "released "+l.Key())
	}
	return nil
}

// extend renews l (mode "") or holds it (mode) to ttl on every master,
// each step bounded by timeout, and needs a quorum (verdict). First every
// master renews our record where it stands, and says where the key is
// free because the master lost its data since the grant (restarted
// empty, flushed). Those are taken back (a second step on them) only when
// mayTakeBack: a loss erases a release or a break as well, so a master
// that lost its data cannot tell whether the lease is still ours; only
// the masters that kept theirs can. Re-created records stay only when
// the renewal succeeds with them; else they are given back (giveBack).
//
// Unlike an acquire, a renewal counts a master that restarted too
// recently (young) once it holds our record: the delayed restart keeps a
// young master from helping anyone *establish* a lock it may have lost
// there; ours was established by a quorum of masters that were not
// young, and the masters that kept their data say it is still ours.
func (s *redlockStore) extend(ctx context.Context, l *lock.Held, ttl time.Duration, mode string, timeout time.Duration, what string) error {
	known := s.knownNow()
	ans, errs := fan(ctx, s.r, timeout, func(ctx context.Context, _ int, n *Backend) (int64, error) {
		return s.refresh(ctx, n, l, ttl, mode, false)
	})
	lost := make([]bool, len(ans))
	for k := range ans {
		lost[k] = errs[k] == nil && ans[k] == rlLost
	}
	tried := slices.Contains(lost, true) && mayTakeBack(ans, errs, known)
	took := false
	if tried {
		first, firstErrs := ans, errs
		ans, errs = fan(ctx, s.r, timeout, func(ctx context.Context, k int, n *Backend) (int64, error) {
			if !lost[k] {
				return first[k], firstErrs[k]
			}
			return s.refresh(ctx, n, l, ttl, mode, true)
		})
		took = mayTakeBack(ans, errs, known)
	}
	s.learn(ans, errs)
	err := s.r.quorumOf(verdict(ans, errs, took), what)
	if tried && (err != nil || !took) {
		s.giveBack(ctx, l, lost, timeout)
	}
	return err
}

// mayTakeBack says whether a lease's records may be re-created on the
// masters that lost their data since it was granted, given every
// master's answer and the masters known to have held our record
// (redlockStore.known): only when some master renewed our record as it
// stood, none that answered names another holder, and none known to
// have held our record has the key free although it kept its data.
//
// Why this is enough: a loss erases a release, a break or another's
// grant as well, so a master that lost its data cannot tell whether the
// lease is still ours; the danger is a lease that ended (broken, or
// expired while the holder renewed on) handed a quorum again beside a
// new holder. The lease ends on a master only by the removal of our
// record there: a master that kept its data shows it as free (rlFree)
// or, once someone took it, another's (rlAnother), and one that lost it
// shows nothing. So another's record anywhere vetoes (a new holder, or
// one under way, may own the lost masters too), and so does a free key
// on a master known to have held our record: released, broken or
// expired there, the lease may have ended on the lost masters as well.
// A free key on a master that never held our record (cut off during the
// acquire, or emptied before a resume) says nothing about the lease:
// the key is as it was when the lease got its quorum without it, and it
// must not veto (else a lease granted on only a quorum is lost with the
// first of that quorum that loses its data, though no one else held the
// key). What no answer can show: a break that reached only masters that
// since lost their data, did not answer, or held our record unknown to
// us (a grant or renewal whose reply was lost, until the next renewal
// there answers). With no record left as it stood (every master that
// answered lost its data), nothing shows the lease is still ours.
func mayTakeBack(ans []int64, errs []error, known []bool) bool {
	renewed := false
	for k, a := range ans {
		if errs[k] != nil {
			continue
		}
		if a == rlAnother || a == rlFree && known[k] {
			return false
		}
		renewed = renewed || a == rlRenewed
	}
	return renewed
}

// knownNow is a copy of known, for one renewal.
func (s *redlockStore) knownNow() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.known)
}

// learn updates known from a renewal's answers: our record renewed or
// re-created (if it was given back, the master answers "lost" next
// time) marks a master, "lost" clears it; an error or another answer
// leaves it as it was (a master whose record expired or was broken
// stays known, so its free key keeps vetoing).
func (s *redlockStore) learn(ans []int64, errs []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range ans {
		switch {
		case errs[k] != nil:
		case a == rlRenewed, a == rlTakenBack:
			s.known[k] = true
		case a == rlLost:
			s.known[k] = false
		}
	}
}

// verdict turns the masters' answers into quorumOf's errors: our record
// renewed counts, and re-created when took (the take-back stood,
// mayTakeBack); anything else a master answered is ErrNotHeld.
func verdict(ans []int64, errs []error, took bool) []error {
	out := make([]error, len(ans))
	for k, a := range ans {
		switch {
		case errs[k] != nil:
			out[k] = errs[k]
		case a != rlRenewed && (a != rlTakenBack || !took):
			out[k] = lock.ErrNotHeld
		}
	}
	return out
}

// giveBack removes our record again (owner-checked, waking nobody: it
// frees nothing a waiter waits for) on the masters where a renewal may
// have re-created it but did not keep it, on a fresh context (ctx may
// have ended).
func (s *redlockStore) giveBack(ctx context.Context, l *lock.Held, on []bool, timeout time.Duration) {
	s.r.each(context.WithoutCancel(ctx), timeout, func(ctx context.Context, k int, n *Backend) error {
		if !on[k] {
			return nil
		}
		return n.release(ctx, l.Key(), l.Owner(), 0, 1, "")
	})
}

// writeBack is an acquire's refresh on master k, which granted: the
// quorum's token into our record (and the counter raised to it); nil
// only when our record was there, and then k is known to hold it.
func (s *redlockStore) writeBack(ctx context.Context, k int, n *Backend, l *lock.Held) error {
	a, err := s.refresh(ctx, n, l, l.TTL(), "", false)
	s.mu.Lock()
	s.known[k] = err == nil && a == rlRenewed
	s.mu.Unlock()
	return verdict([]int64{a}, []error{err}, false)[0]
}

// refresh extends the lease to ttl on master n (redlock_renew.lua), with
// mode for a hold, and writes the lease's token into the record; where
// the master lost the key since the grant it answers rlLost, or, with
// takeBack, re-creates our record (rlTakenBack); where the key is free
// and the master kept its data, rlFree; another's, rlAnother.
func (s *redlockStore) refresh(ctx context.Context, n *Backend, l *lock.Held, ttl time.Duration, mode string, takeBack bool) (int64, error) {
	take := ""
	if takeBack {
		take = "1"
	}
	args := append([]any{l.Owner(), max(ttl.Milliseconds(), 1), strconv.FormatUint(l.Token(), 10), mode,
		time.Since(l.Granted()).Milliseconds(), sameBoot.Milliseconds(), take}, s.fields...)
	res, err := redlockRenewScript().Run(ctx, n.c, []string{n.lockKey(l.Key()), n.tokenKey(l.Key()), n.bootKey(), n.ttlsKey()}, args...).Slice()
	if err != nil {
		return 0, n.unavailable(err)
	}
	if len(res) == 3 {
		if a, ok := res[0].(int64); ok && a >= rlAnother && a <= rlFree {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unexpected reply from the Redlock renew script: %v", res)
}
