package zookeeper

// The engine's operations on one session, each bounded by its context
// (go-zookeeper takes none: call): a key's line, holds, slots, token
// counter and ledger are made of these.

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

var acl = zk.WorldACL(zk.PermAll)

// call runs f (a go-zookeeper request, which takes no context) and returns
// its result, or ctx's error as soon as ctx ends: no engine call may stall
// its caller past its deadline. f's goroutine ends when the client answers
// or gives up on the connection.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// call2 is call for requests that return two values.
func call2[A, B any](ctx context.Context, f func() (A, B, error)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := call(ctx, func() (pair, error) {
		a, b, err := f()
		return pair{a, b}, err
	})
	return p.a, p.b, err
}

func (s *session) create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return call(ctx, func() (string, error) { return s.conn.Create(path, data, flags, acl) })
}

// createTTL creates a TTL node, which the server deletes once it has had
// no change (and no children) for ttl.
func (s *session) createTTL(ctx context.Context, path string, data []byte, ttl time.Duration) error {
	_, err := call(ctx, func() (string, error) { return s.conn.CreateTTL(path, data, zk.FlagTTL, acl, ttl) })
	return err
}

func (s *session) set(ctx context.Context, path string, data []byte) (*zk.Stat, error) {
	return call(ctx, func() (*zk.Stat, error) { return s.conn.Set(path, data, -1) })
}

// sync has this session's server apply everything the leader had
// committed when it asked (path: a node under which the reads that follow
// look; it need not exist).
func (s *session) sync(ctx context.Context, path string) error {
	_, err := call(ctx, func() (string, error) { return s.conn.Sync(path) })
	return ignore(err, zk.ErrNoNode)
}

// exists stats a node; ok is false when it is missing.
func (s *session) exists(ctx context.Context, path string) (ok bool, st *zk.Stat, err error) {
	return call2(ctx, func() (bool, *zk.Stat, error) { return s.conn.Exists(path) })
}

// remove deletes path at version (-1: any).
func (s *session) remove(ctx context.Context, path string, version int32) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(path, version) })
	return err
}

// get reads a node, its data decoded as a record; ok is false when it is
// gone.
func (s *session) get(ctx context.Context, path string) (d described, ok bool, err error) {
	data, stat, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.conn.Get(path) })
	if err != nil {
		return described{}, false, ignore(err, zk.ErrNoNode)
	}
	return described{rec: decodeRecord(data), raw: data, stat: stat}, true, nil
}

// getAll reads the node at path(item) of each item all at once
// (go-zookeeper pipelines requests on one connection); one gone has a nil
// stat. The error is the first one's in items' order.
func getAll[T any](ctx context.Context, s *session, items []T, path func(T) string) ([]described, error) {
	ds, errs := make([]described, len(items)), make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() { ds[i], _, errs[i] = s.get(ctx, path(item)) })
	}
	wg.Wait()
	return ds, cmp.Or(errs...)
}

// described is a node as get read it.
type described struct {
	rec  record
	raw  []byte
	stat *zk.Stat
}

// children lists dir with its cversion, which every create and delete of
// a child raises; a missing dir is an empty line (cversion -1).
func (s *session) children(ctx context.Context, dir string) ([]string, int32, error) {
	names, st, err := call2(ctx, func() ([]string, *zk.Stat, error) { return s.conn.Children(dir) })
	if err != nil {
		return nil, -1, ignore(err, zk.ErrNoNode)
	}
	return names, st.Cversion, nil
}

// multi runs ops in one transaction; the error is the failing op's (the
// others of a failed multi answer "rolled back").
func (s *session) multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	for _, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && r.Error.Error() != "unknown error: -2" {
			return res, r.Error
		}
	}
	return res, err
}

// ignore is err, or nil when err is one of those named.
func ignore(err error, these ...error) error {
	for _, e := range these {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}

// ensurePath creates every missing node of path (absolute), as plain
// persistent nodes.
func (b *Backend) ensurePath(ctx context.Context, s *session, path string) error {
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + part
		ok, _, err := s.exists(ctx, p)
		if err == nil && !ok {
			_, err = s.create(ctx, p, nil, zk.FlagPersistent)
		}
		if ignore(err, zk.ErrNodeExists) != nil {
			return err
		}
	}
	return nil
}

// ensureDir creates dir, a key's node or its ledger's (a container: the
// server removes it once it is empty), and the root above it when that is
// missing.
func (b *Backend) ensureDir(ctx context.Context, s *session, dir string) error {
	for attempt := 0; ; attempt++ {
		_, err := call(ctx, func() (string, error) { return s.conn.CreateContainer(dir, nil, zk.FlagContainer, acl) })
		if !errors.Is(err, zk.ErrNoNode) || attempt > 0 {
			return ignore(err, zk.ErrNodeExists)
		}
		if err := b.ensurePath(ctx, s, b.root); err != nil {
			return err
		}
	}
}

// tidy removes key's node if it is empty (a non-empty node is never
// deleted: the server refuses). Best effort: the server removes empty
// container nodes on its own too.
func (b *Backend) tidy(ctx context.Context, s *session, dir string) { _ = s.remove(ctx, dir, -1) }
