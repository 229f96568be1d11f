package renew

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Without a suspend the suspended time does not move, however busy the
// machine: goroutines that keep every core busy preempt the readings, and
// a reading that a preemption split would show a jump. A jump above
// SuspendTolerance would cost a lease for nothing.
func TestSystemClockSteadyWithoutSuspend(t *testing.T) {
	if !bootSupported() {
		t.Fatal("CLOCK_BOOTTIME is not readable: the keeper cannot notice a suspend")
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = make([]byte, 4096) // work for the scheduler and the GC
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	first := SystemClock.Suspended()
	lo, hi := first, first
	deadline := time.Now().Add(300 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		s := SystemClock.Suspended()
		lo, hi = min(lo, s), max(hi, s)
		n++
	}
	t.Logf("%d readings, suspended time %s, spread %s", n, first, hi-lo)
	if hi-lo > SuspendTolerance {
		t.Errorf("the suspended time moved by %s (from %s to %s) without a suspend", hi-lo, lo, hi)
	}
}

// Suspended agrees with the kernel's other account of it: /proc/uptime
// (CLOCK_BOOTTIME, to the centisecond) minus CLOCK_MONOTONIC.
func TestSystemClockMatchesProcUptime(t *testing.T) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Skip(err)
	}
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	up, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Duration(up*float64(time.Second)) - time.Duration(mono.Nano())
	got := SystemClock.Suspended()
	if diff := got - want; diff < -20*time.Millisecond || diff > 20*time.Millisecond {
		t.Errorf("Suspended() = %s, /proc/uptime says %s", got, want)
	}
}
