package file

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// A flock cannot be taken from its holder, so a local `distlock break`
// removes the record that names the holder and then sends the holding
// process SIGWINCH (ignored by default, so a reused pid is not hurt). The
// holder's leases answer with Alerts: its keeper renews at once, finds the
// record gone and stops the command without waiting for the next renewal.
var (
	alertsOnce sync.Once
	alerts     = make(chan struct{}, 1)
)

// breakAlerts starts listening for SIGWINCH (once per process) and returns
// the channel that gets a value for each one.
func breakAlerts() <-chan struct{} {
	alertsOnce.Do(func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGWINCH)
		go func() {
			for range sig {
				select {
				case alerts <- struct{}{}:
				default:
				}
			}
		}()
	})
	return alerts
}

// pokeHolder tells the distlock holding a lock on this machine to look at
// its lease now (see breakAlerts).
func pokeHolder(pid int) { syscall.Kill(pid, syscall.SIGWINCH) }
