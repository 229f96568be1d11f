package main

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"
)

// injector runs one fault over and over on a row, each time while a
// holder is inside a stalled section (one that holds for 3 TTLs), until
// the fault window closes. The gaps and outage lengths come from the row's
// seed.
type injector struct {
	fault string
	e     engine
	reg   *register
	wl    *workload
	ttl   time.Duration
	stall time.Duration // how long the section a fault waits for holds
	rng   *rand.Rand
	log   func(format string, args ...any)

	injected int
	lastHeal time.Time
	lastHeld int // the section inside during the last fault
	errs     []string
}

func (in *injector) run(until time.Time) {
	for {
		gap := time.Duration(500+in.rng.IntN(1000)) * time.Millisecond
		if time.Now().Add(gap).After(until) {
			return
		}
		time.Sleep(gap)
		if in.fault == "none" {
			continue
		}
		stalled := in.reg.requestStall(in.stall)
		var s *section
		select {
		case s = <-stalled:
		case <-time.After(2*in.ttl + 5*time.Second):
			in.reg.cancelStall()
			continue
		}
		time.Sleep(time.Duration(in.rng.IntN(int(in.ttl / 4))))
		if err := in.inject(s); err != nil {
			in.errs = append(in.errs, err.Error())
			in.log("%s: %v", in.fault, err)
		} else {
			in.injected++
		}
		in.lastHeal, in.lastHeld = time.Now(), s.ID
	}
}

// outage is how long a pause or partition lasts: longer than the TTL.
func (in *injector) outage() time.Duration {
	return in.ttl*3/2 + time.Duration(in.rng.Int64N(int64(in.ttl/2)))
}

// inject applies the fault once with section s inside and heals it.
func (in *injector) inject(s *section) error {
	in.log("%s: holder contender %d, token %d", in.fault, s.Contender, s.Token)
	switch in.fault {
	case "pause-server":
		if err := in.e.pause(); err != nil {
			return err
		}
		time.Sleep(in.outage())
		return in.e.cont()
	case "partition-client":
		heal, err := in.e.partition(s.Contender)
		if err != nil {
			return err
		}
		time.Sleep(in.outage())
		heal()
		return nil
	case "restart-server":
		return in.e.restart()
	case "wipe-server":
		if err := in.e.wipe(); err != nil {
			return err
		}
		// A newcomer arrives right after the data is lost: the looping
		// contenders wait in a line the wipe took away, and would seldom
		// try before the holder's next renewal finds its lease gone, so
		// without it a single node's expected overlap would hardly ever
		// show. On engines that must stay safe (Redlock with one master
		// wiped) it is the run the guarantee is about.
		in.wl.arrive()
		return nil
	case "failover", "kill-leader":
		return in.e.failover(in.wl.arrive)
	case "clock-jump":
		return in.e.jumpClock(3 * in.ttl)
	case "kill-holder":
		return in.wl.signal(s.Contender, syscall.SIGKILL)
	case "stop-holder":
		if err := in.wl.signal(s.Contender, syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(2*in.ttl + time.Duration(in.rng.Int64N(int64(in.ttl/2))))
		return in.wl.signal(s.Contender, syscall.SIGCONT)
	}
	return fmt.Errorf("fault %q not built", in.fault)
}
