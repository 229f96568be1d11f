package mysql

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Doctor = (*Backend)(nil)

// Doctor implements lock.Doctor: the server's clock, which judges every
// lease's expiry, against ours; the connections free (headroom.go).
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{b.clockCheck(ctx, req), b.headroomCheck(ctx, req)}
}

// clockCheck reads the server's clock, SYSDATE(6) (lock.ReadClock: best of
// a few round trips).
func (b *Backend) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	newCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, req.Timeout) }
	offset, unc, best, err := lock.ReadClock(newCtx, func(ctx context.Context) (time.Time, error) {
		var s string
		if err := b.db.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(SYSDATE(6))").Scan(&s); err != nil {
			return time.Time{}, err
		}
		secs, err := strconv.ParseFloat(s, 64)
		return time.Unix(0, int64(secs*1e9)), err
	})
	if err != nil {
		return lock.Check{Name: "clock", Status: lock.CheckWarning,
			Detail: "cannot read the server's clock (SYSDATE(6)): " + err.Error(),
			Fix:    "make sure both clocks are synchronised (NTP)"}
	}
	return lock.ClockOffsetCheck(offset, unc, req.TTL, fmt.Sprintf("SYSDATE(6), best of %d round trips: %s", lock.ClockReadings, best.Round(time.Microsecond)))
}
