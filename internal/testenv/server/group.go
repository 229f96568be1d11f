package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// addrList is the client addresses of ps, comma-separated.
func addrList(ps []*Process) string {
	var addrs []string
	for _, p := range ps {
		addrs = append(addrs, p.Addr())
	}
	return strings.Join(addrs, ",")
}

// closeAll closes every process of ps (nil ones are skipped).
func closeAll(ps []*Process) error {
	var errs []error
	for _, p := range ps {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

// startGroup starts the n members of an ensemble on per free ports each:
// build(i, ports) is member i's spec, given every member's ports (member i
// has ports[per*i:per*(i+1)]: members name each other). It launches every
// member without waiting for any to answer (they answer only once a quorum
// runs), then waits for each to answer within wait. It does not retry on
// other ports. On failure it closes the members it launched.
func startGroup(n, per int, wait time.Duration, build func(i int, ports []int) (spec, error)) (ps []*Process, err error) {
	defer func() {
		if err != nil {
			_ = closeAll(ps)
		}
	}()
	ports, err := freePorts(per * n)
	if err != nil {
		return nil, err
	}
	var specs []spec
	for i := range n {
		s, err := build(i, ports)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	for _, s := range specs {
		p := &Process{spec: s}
		p.mu.Lock()
		err := p.launchLocked()
		p.mu.Unlock()
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	exited := anyExited(ps)
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := waitReady(ctx, p.spec, p.pid, exited)
		cancel()
		if errors.Is(err, errExited) {
			return ps, memberExited(ps)
		}
		if err != nil {
			return ps, err
		}
	}
	return ps, nil
}

// anyExited is closed as soon as any member of ps has exited: a member
// that could not start (a port taken since freePorts chose it) leaves the
// others without a quorum, and the wait for them must end then, with
// errExited (which the callers' retry on fresh ports looks for), not at
// its deadline.
func anyExited(ps []*Process) <-chan struct{} {
	one := make(chan struct{}, len(ps)) // a send per member that exits
	for _, p := range ps {
		go func(done <-chan struct{}) {
			<-done
			one <- struct{}{}
		}(p.done)
	}
	exited := make(chan struct{})
	go func() {
		<-one
		close(exited)
	}()
	return exited
}

// memberExited is the errExited error of the first member of ps that has
// exited, with its log.
func memberExited(ps []*Process) error {
	for _, p := range ps {
		select {
		case <-p.done:
			s := p.spec
			return fmt.Errorf("%s %w on %s; log %s:\n%s", s.name, errExited, s.addr, s.logPath, logTail(s.logPath))
		default:
		}
	}
	return errExited
}

// startedOrClosed returns g once start (its error err) has started it, or
// closes what start began of it and returns err.
func startedOrClosed[G interface{ Close() error }](g G, err error) (G, error) {
	if err != nil {
		_ = g.Close()
		var none G
		return none, err
	}
	return g, nil
}

// pollUntil calls try every interval until it returns nil, or ctx ends:
// then the error names what (a server) and try's last error.
func pollUntil(ctx context.Context, interval time.Duration, what string, try func() error) error {
	for {
		last := try()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v (%w)", what, last, ctx.Err())
		case <-time.After(interval):
		}
	}
}
