package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// entry is one contender in a key's line: its lock node (while its
// process holds a session) and/or its hold node (once held with no
// process), which share its nonce and its sequence number.
type entry struct {
	nonce string
	seq   int64
	limit int
	lock  string // lock node name, "" if none
	hold  string // newest hold node name, "" if none
	gen   int    // generation of hold
}

// node returns the entry's node that stands for it: the lock node while
// there is one, else the hold node.
func (e entry) node() string {
	if e.lock != "" {
		return e.lock
	}
	return e.hold
}

func lockPrefix(limit int, nonce string) string {
	return fmt.Sprintf("lock-%d-%s-", limit, nonce)
}

func holdName(limit int, nonce string, gen int, seq int64) string {
	return fmt.Sprintf("hold-%d-%s-%d-%010d", limit, nonce, gen, seq)
}

func slotName(i int) string { return "slot-" + strconv.Itoa(i) }

// parseLine orders the children of a key's node into its line (by
// sequence number). Slot nodes and foreign names are left out.
func parseLine(children []string) []entry {
	byNonce := map[string]*entry{}
	for _, name := range children {
		parts := strings.Split(name, "-")
		var e entry
		var gen int
		switch {
		case parts[0] == "lock" && len(parts) == 4:
		case parts[0] == "hold" && len(parts) == 5:
			g, err := strconv.Atoi(parts[3])
			if err != nil {
				continue
			}
			gen = g
		default:
			continue
		}
		limit, err1 := strconv.Atoi(parts[1])
		seq, err2 := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if err1 != nil || err2 != nil || limit < 1 || parts[2] == "" {
			continue
		}
		e.nonce, e.seq, e.limit = parts[2], seq, limit
		p := byNonce[e.nonce]
		if p == nil {
			p = &e
			byNonce[e.nonce] = p
		}
		if parts[0] == "lock" {
			p.lock = name
		} else if p.hold == "" || gen > p.gen {
			p.hold, p.gen = name, gen
		}
	}
	line := make([]entry, 0, len(byNonce))
	for _, e := range byNonce {
		line = append(line, *e)
	}
	slices.SortFunc(line, func(a, b entry) int {
		if a.seq != b.seq {
			return int(a.seq - b.seq)
		}
		return strings.Compare(a.nonce, b.nonce)
	})
	return line
}

// children lists dir on s; a missing dir is an empty line.
func (b *Backend) children(ctx context.Context, s *session, dir string) ([]string, error) {
	names, _, err := b.childrenV(ctx, s, dir)
	return names, err
}

// childrenV is children with dir's cversion (-1 when dir is missing),
// which every create and delete of a child raises.
func (b *Backend) childrenV(ctx context.Context, s *session, dir string) ([]string, int32, error) {
	type r struct {
		names []string
		cv    int32
	}
	got, err := call(ctx, func() (r, error) {
		names, st, err := s.conn.Children(dir)
		if err != nil {
			return r{}, err
		}
		return r{names, st.Cversion}, nil
	})
	if err != nil && errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	return got.names, got.cv, err
}

// described is a node read for its holder's description.
type described struct {
	rec  record
	raw  []byte
	stat *zk.Stat
}

// read gets a node's data and stat; ok is false when it is gone.
func (b *Backend) read(ctx context.Context, s *session, path string) (described, bool, error) {
	type r struct {
		data []byte
		stat *zk.Stat
	}
	got, err := call(ctx, func() (r, error) {
		data, stat, err := s.conn.Get(path)
		return r{data, stat}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return described{}, false, nil
	}
	if err != nil {
		return described{}, false, err
	}
	return described{rec: decodeRecord(got.data), raw: got.data, stat: got.stat}, true, nil
}

// holdExpiry is when (server ms) a hold node stops holding: its mtime plus
// the hold's length.
func holdExpiry(d described) int64 { return d.stat.Mtime + d.rec.HoldMs }

// holderOf describes the entry e of key, read as d.
func holderOf(key string, e entry, d described, now time.Time) lock.Holder {
	// A session's time left is the server's alone to know: ExpiresIn -1.
	h := d.rec.Holder(key)
	h.Token = d.rec.Token // 0 for a contender still waiting (token.go)
	if e.lock != "" && d.rec.Hold == "" {
		return h
	}
	h.Hold = d.rec.Hold
	h.ExpiresIn = max(time.UnixMilli(holdExpiry(d)).Sub(now), 0)
	return h
}
