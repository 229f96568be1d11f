package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Doctor = (*Backend)(nil)

// Doctor implements lock.Doctor: the server's clock, which judges every
// lease's expiry (clock_timestamp()), against ours.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{b.clockCheck(ctx, req)}
}

// clockCheck reads clock_timestamp() a few times and keeps the reading with
// the shortest round trip: the server read its clock within that round
// trip, so the offset is known to within half of it.
func (b *Backend) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	best := time.Duration(-1)
	var offset time.Duration
	for range 5 {
		rctx, cancel := context.WithTimeout(ctx, req.Timeout)
		sent := time.Now()
		var server time.Time
		err := b.pool.QueryRow(rctx, "SELECT clock_timestamp()").Scan(&server)
		rtt := time.Since(sent)
		cancel()
		if err != nil {
			return lock.Check{Name: "clock", Status: lock.CheckWarning,
				Detail: "cannot read the server's clock (clock_timestamp()): " + err.Error(),
				Fix:    "make sure both clocks are synchronised (NTP)"}
		}
		if best < 0 || rtt < best {
			best = rtt
			offset = server.Sub(sent.Add(rtt / 2).Round(0))
		}
	}
	return lock.ClockOffsetCheck(offset, best/2, req.TTL, fmt.Sprintf("clock_timestamp(), best of 5 round trips: %s", best.Round(time.Microsecond)))
}
