package cmd

import (
	"log/slog"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// closeWait bounds how long distlock waits for the engine's client to
// close on its way out. By then the lock is released (or its release gave
// up after --connect-timeout); closing only tidies up the connection, which
// the kernel closes anyway when distlock exits. Some clients wait on the
// server to close (ZooKeeper's waits up to 1 s for its closeSession): a
// silent engine must not keep distlock from exiting after a SIGTERM
// (docs/ARCHITECTURE.md, "The way out").
const closeWait = 250 * time.Millisecond

// closeEngine closes b, waiting at most closeWait, and logs when the
// client was slower than that (it goes on closing in the background).
func closeEngine(b lock.Backend, log *slog.Logger) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		b.Close()
		close(done)
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("closing the connection to the engine is slow; exiting without waiting for it", "waited", time.Since(start).Round(time.Millisecond))
	}
}
