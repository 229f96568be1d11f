package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/internal/testenv/faultproxy"
)

// consulSessions learns, from the fault proxy's traffic, when each Consul
// session's creation and renewals were forwarded to the server: the server
// took each at or after that moment, and Consul promises not to expire a
// session before its TTL from the last it took. So a holder's command dead
// before (last forwarded + TTL) was dead before its session could expire:
// the strict form of deadbeforeexpiry on Consul, whose server keeps an
// expired session up to 2×TTL and says nothing of its time left.
type consulSessions struct {
	mu      sync.Mutex
	created map[uint64]time.Time // per connection: a create request not yet answered
	last    map[string]time.Time // session id → last create or renew forwarded
}

var (
	renewPath = regexp.MustCompile(`PUT /v1/session/renew/([0-9a-f-]{36})`)
	createdID = regexp.MustCompile(`"ID":\s*"([0-9a-f-]{36})"`)
)

// tapConsulSessions starts watching px's traffic.
func tapConsulSessions(px *faultproxy.Proxy) *consulSessions {
	cs := &consulSessions{created: map[uint64]time.Time{}, last: map[string]time.Time{}}
	px.SetTap(cs.see)
	return cs
}

func (cs *consulSessions) see(conn uint64, toServer bool, data []byte, at time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch {
	case toServer && bytes.Contains(data, []byte("PUT /v1/session/create")):
		cs.created[conn] = at
	case toServer:
		for _, m := range renewPath.FindAllSubmatch(data, -1) {
			cs.last[string(m[1])] = at
		}
	default: // replies come in order on a connection: the create's first
		if t, ok := cs.created[conn]; ok {
			if m := createdID.FindSubmatch(data); m != nil {
				cs.last[string(m[1])] = t
				delete(cs.created, conn)
			}
		}
	}
}

// lastSent is when session id's creation or last renewal was forwarded.
func (cs *consulSessions) lastSent(id string) (time.Time, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	t, ok := cs.last[id]
	return t, ok
}

// consulHolderSession reads, directly from the server, the session of
// KEY's holder with token want (the first in line when want is 0) and the
// TTL Consul gave that session.
func consulHolderSession(ts *testscript.TestScript, key string, want uint64) (string, time.Duration) {
	c, err := api.NewClient(&api.Config{Address: stateOf(ts).server.Addr()})
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kvs, _, err := c.KV().List("distlock/"+url.PathEscape(key)+"/", (&api.QueryOptions{}).WithContext(ctx))
	ts.Check(err)
	var best *api.KVPair
	for _, kv := range kvs {
		var r struct {
			Token uint64 `json:"token"`
		}
		if json.Unmarshal(kv.Value, &r) != nil || (want != 0 && r.Token != want) {
			continue
		}
		if best == nil || kv.CreateIndex < best.CreateIndex {
			best = kv
		}
	}
	if best == nil {
		ts.Fatalf("no holder of %s with token %d on the Consul server", key, want)
	}
	se, _, err := c.Session().Info(best.Session, (&api.QueryOptions{}).WithContext(ctx))
	ts.Check(err)
	if se == nil {
		ts.Fatalf("the session %s of %s's holder is gone from the Consul server", best.Session, key)
	}
	ttl, err := time.ParseDuration(se.TTL)
	ts.Check(err)
	return best.Session, ttl
}

// consulDeadBeforeExpiry fails the script unless the command seen dead at
// dead died before the session of KEY's holder (token want) could expire
// by Consul's own promise: dead < last creation or renewal forwarded + TTL.
func consulDeadBeforeExpiry(ts *testscript.TestScript, cs *consulSessions, key string, want uint64, dead time.Time) {
	sid, ttl := consulHolderSession(ts, key, want)
	sent, ok := cs.lastSent(sid)
	if !ok {
		ts.Fatalf("the proxy never saw session %s created or renewed", sid)
	}
	if left := sent.Add(ttl).Sub(dead); left <= 0 {
		ts.Fatalf("the command was seen dead %s after its session could expire (its last renewal forwarded at %s, TTL %s)", -left, sent.Format(time.StampMicro), ttl)
	} else {
		ts.Logf("the command was dead %s before its Consul session could expire (last renewal forwarded + TTL %s)", left.Round(100*time.Microsecond), ttl)
	}
}
