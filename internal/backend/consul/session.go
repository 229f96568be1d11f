package consul

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// sessionNode is the catalog node every distlock session lives on: a node
// of its own, registered by distlock (no agent, no health checks), which
// no agent's failure or departure removes. Consul destroys a session
// before its TTL when its node leaves the catalog, and on an agent's own
// node that happens when the agent leaves, or is a failed server that
// autopilot removes: the line would then move at once while the holder's
// command runs until its next renewal
// (consul3/session_server_killed_holder_keeps_lock).
const sessionNode = "distlock-sessions"

// lockDelay is our sessions' lock-delay: Consul's smallest (the client
// sends none for 0, and the server then applies its 15 s default).
// Lock-delay protects clients that learn late that they lost a lock; a
// distlock holder stops its command before its session can expire, its
// sessions end early only by a release or a break, which hand over at once
// on every engine, and a delay would keep a freed slot idle.
const lockDelay = time.Millisecond

// errSessionGone: Consul says the session no longer exists (expired,
// destroyed by a break or a release).
var errSessionGone = errors.New("the Consul session expired or was destroyed")

// createSession makes a TTL session with behavior=delete and no health
// checks on sessionNode, registering that node first when Consul does not
// know it (a new or emptied cluster). A TTL the servers refuse (below
// session_ttl_min, above 24 h) is a usage error saying what they allow.
func (b *Backend) createSession(ctx context.Context, ttl time.Duration) (string, error) {
	id, err := b.newSession(ctx, ttl)
	if err != nil && strings.Contains(err.Error(), "Missing node registration") {
		if err = b.registerNode(ctx); err == nil {
			id, err = b.newSession(ctx, ttl)
		}
	}
	if err != nil {
		if bad := ttlRefused(ttl, err); bad != nil {
			return "", bad
		}
		return "", b.opError("create a session", err)
	}
	return id, nil
}

func (b *Backend) newSession(ctx context.Context, ttl time.Duration) (string, error) {
	var id string
	err := b.call(func(c *api.Client) error {
		var err error
		id, _, err = c.Session().CreateNoChecks(&api.SessionEntry{
			Name:      "distlock",
			Node:      sessionNode,
			TTL:       ttl.String(),
			Behavior:  api.SessionBehaviorDelete,
			LockDelay: lockDelay,
		}, wo(ctx))
		return err
	})
	return id, err
}

// registerNode puts sessionNode in the catalog (the ACL token needs
// node:write on it, as on the sessions).
func (b *Backend) registerNode(ctx context.Context) error {
	return b.call(func(c *api.Client) error {
		_, err := c.Catalog().Register(&api.CatalogRegistration{
			Node: sessionNode, Address: "127.0.0.1", SkipNodeUpdate: true,
			NodeMeta: map[string]string{"distlock": "the node distlock's lock sessions live on"},
		}, wo(ctx))
		return err
	})
}

// ttlBounds finds the bounds in Consul's "Invalid Session TTL '…', must
// be between [10s=24h0m0s]".
var ttlBounds = regexp.MustCompile(`must be between \[([^=\]]+)=([^\]]+)\]`)

// ttlError is Consul's refusal of a session TTL, a usage error (exit 64)
// that says what the servers allow.
type ttlError struct {
	ttl      time.Duration
	min, max string // as Consul wrote them
}

func (e *ttlError) Error() string {
	return fmt.Sprintf("--ttl %s is not a session TTL this Consul grants: it allows %s to %s (the lower bound is the servers' session_ttl_min); use a --ttl in that range", e.ttl, e.min, e.max)
}

func (e *ttlError) Is(target error) bool { return target == lock.ErrInvalid }

// least is the shortest TTL the servers grant (0 when unreadable).
func (e *ttlError) least() time.Duration {
	d, _ := time.ParseDuration(e.min)
	return d
}

// ttlRefused is the *ttlError for a TTL Consul refused, or nil.
func ttlRefused(ttl time.Duration, err error) error {
	m := ttlBounds.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return &ttlError{ttl: ttl, min: m[1], max: m[2]}
}

// renewSession renews id: errSessionGone when Consul no longer has it.
func (b *Backend) renewSession(ctx context.Context, id string) error {
	var se *api.SessionEntry
	err := b.call(func(c *api.Client) error {
		var err error
		se, _, err = c.Session().Renew(id, wo(ctx))
		return err
	})
	switch {
	case err != nil:
		return b.opError("renew a session", err)
	case se == nil:
		return errSessionGone
	}
	return nil
}

// destroySession destroys id, which deletes every key it holds
// (behavior=delete). Destroying a session that is gone is no error.
func (b *Backend) destroySession(ctx context.Context, id string) error {
	err := b.call(func(c *api.Client) error {
		_, err := c.Session().Destroy(id, wo(ctx))
		return err
	})
	if err != nil {
		return b.opError("destroy a session", err)
	}
	return nil
}

// cleanup destroys id on a fresh short context (the caller's may have
// just ended); if that fails the session expires by itself.
func (b *Backend) cleanup(ctx context.Context, id string) {
	if id == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.connTO, 2*time.Second))
	defer cancel()
	_ = b.destroySession(cctx, id)
}

// keepAlive renews id every ttl/3 until ctx ends (a waiter's session);
// it closes lost when Consul says the session is gone. Other failures
// wait for the next round.
func (b *Backend) keepAlive(ctx context.Context, id string, ttl time.Duration, lost chan<- struct{}) {
	every := max(ttl/3, 50*time.Millisecond)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(every):
			rctx, cancel := context.WithTimeout(ctx, every)
			gone := errors.Is(b.renewSession(rctx, id), errSessionGone)
			cancel()
			if gone {
				close(lost)
				return
			}
		}
	}
}

// txn runs ops as one Consul transaction: ok false when a check failed
// (nothing was applied); err when Consul did not answer.
func (b *Backend) txn(ctx context.Context, op string, ops api.TxnOps) (bool, api.TxnResults, error) {
	ok, res, _, err := b.txnWhy(ctx, op, ops)
	return ok, res, err
}

// txnWhy is txn that also says why a transaction was not applied
// (Consul's errors, joined).
func (b *Backend) txnWhy(ctx context.Context, op string, ops api.TxnOps) (bool, api.TxnResults, string, error) {
	var (
		ok   bool
		resp *api.TxnResponse
	)
	err := b.call(func(c *api.Client) error {
		var err error
		ok, resp, _, err = c.Txn().Txn(ops, qo(ctx))
		return err
	})
	if err != nil {
		return false, nil, "", b.opError(op, err)
	}
	var why []string
	for _, e := range resp.Errors {
		why = append(why, e.What)
	}
	if w := strings.Join(why, "; "); refused(errors.New(w)) {
		return false, nil, w, b.opError(op, errors.New(w))
	}
	return ok, resp.Results, strings.Join(why, "; "), nil
}

// kvOp is one KV operation of a transaction.
func kvOp(verb api.KVOp, key string, value []byte, index uint64, session string) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: verb, Key: key, Value: value, Index: index, Session: session}}
}
