package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Doctor = (*Backend)(nil)

// Doctor implements lock.Doctor: the server's clock, which judges every
// lease's expiry (clock_timestamp()), against ours; the connections free
// (headroom.go).
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{b.clockCheck(ctx, req), b.headroomCheck(ctx, req)}
}

// clockCheck reads clock_timestamp() (lock.ReadClock: best of a few round
// trips).
func (b *Backend) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	newCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, req.Timeout) }
	offset, unc, best, err := lock.ReadClock(newCtx, func(ctx context.Context) (time.Time, error) {
		var server time.Time
		err := b.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&server)
		return server, err
	})
	if err != nil {
		return lock.Check{Name: "clock", Status: lock.CheckWarning,
			Detail: "cannot read the server's clock (clock_timestamp()): " + err.Error(),
			Fix:    "make sure both clocks are synchronised (NTP)"}
	}
	return lock.ClockOffsetCheck(offset, unc, req.TTL, fmt.Sprintf("clock_timestamp(), best of %d round trips: %s", lock.ClockReadings, best.Round(time.Microsecond)))
}
