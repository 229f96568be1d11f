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
// destroyed by a break or a release), so neither is what it held.
var errSessionGone = fmt.Errorf("the Consul session expired or was destroyed: %w", lock.ErrNotHeld)

// createSession makes a TTL session with behavior=delete and no health
// checks on sessionNode, registering that node first when Consul does not
// know it (a new or emptied cluster). A TTL the servers refuse (below
// session_ttl_min, above 24 h) is a usage error saying what they allow.
func (b *Backend) createSession(ctx context.Context, ttl time.Duration) (id string, err error) {
	create := func(c *api.Client) (err error) {
		id, _, err = c.Session().CreateNoChecks(&api.SessionEntry{Name: "distlock", Node: sessionNode,
			TTL: ttl.String(), Behavior: api.SessionBehaviorDelete, LockDelay: lockDelay}, wo(ctx))
		return err
	}
	err = b.call(create)
	if err != nil && strings.Contains(err.Error(), "Missing node registration") {
		if err = b.registerNode(ctx); err == nil {
			err = b.call(create)
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
// that says what the servers allow: min and max as Consul wrote them,
// least the shortest TTL they grant (0 when unreadable).
type ttlError struct {
	ttl      time.Duration
	min, max string
	least    time.Duration
}

func (e *ttlError) Error() string {
	return fmt.Sprintf("--ttl %s is not a session TTL this Consul grants: it allows %s to %s (the lower bound is the servers' session_ttl_min); use a --ttl in that range", e.ttl, e.min, e.max)
}

func (e *ttlError) Is(target error) bool { return target == lock.ErrInvalid }

// ttlRefused is the *ttlError for a TTL Consul refused, or nil.
func ttlRefused(ttl time.Duration, err error) error {
	m := ttlBounds.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	least, _ := time.ParseDuration(m[1])
	return &ttlError{ttl: ttl, min: m[1], max: m[2], least: least}
}

// renewSession renews id: errSessionGone when Consul no longer has it.
func (b *Backend) renewSession(ctx context.Context, id string) error {
	var se *api.SessionEntry
	err := b.call(func(c *api.Client) (err error) {
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

// destroy destroys session id, which deletes every key it holds
// (behavior=delete). A session that is gone is no error, and a failed
// destroy leaves a session that expires by itself: callers go on.
func (b *Backend) destroy(ctx context.Context, id string) {
	_ = b.call(func(c *api.Client) error {
		_, err := c.Session().Destroy(id, wo(ctx))
		return err
	})
}

// cleanup destroys id on a fresh short context (the caller's may have
// just ended). Release does not: on its way out, distlock waits on a
// silent engine no longer than the caller's context.
func (b *Backend) cleanup(ctx context.Context, id string) {
	if id == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.connTO, 2*time.Second))
	defer cancel()
	b.destroy(cctx, id)
}

// txn runs ops as one Consul transaction: ok false when a check failed
// (nothing was applied), with why (Consul's errors, joined); err when
// Consul did not answer or refused the token.
func (b *Backend) txn(ctx context.Context, op string, ops api.TxnOps) (ok bool, res api.TxnResults, why string, err error) {
	var resp *api.TxnResponse
	if err = b.call(func(c *api.Client) (err error) {
		ok, resp, _, err = c.Txn().Txn(ops, qo(ctx))
		return err
	}); err != nil {
		return false, nil, "", b.opError(op, err)
	}
	whys := make([]string, len(resp.Errors))
	for i, e := range resp.Errors {
		whys[i] = e.What
	}
	if why = strings.Join(whys, "; "); refused(errors.New(why)) {
		return false, nil, why, b.opError(op, errors.New(why))
	}
	return ok, resp.Results, why, nil
}

// kvOp is one KV operation of a transaction.
func kvOp(verb api.KVOp, key string, value []byte, index uint64, session string) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: verb, Key: key, Value: value, Index: index, Session: session}}
}
