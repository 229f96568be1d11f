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
// lease's expiry, against ours.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{b.clockCheck(ctx, req)}
}

// clockCheck reads the server's clock a few times and keeps the reading
// with the shortest round trip: the server read its clock within that
// round trip, so the offset is known to within half of it.
func (b *Backend) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	best := time.Duration(-1)
	var offset time.Duration
	for range 5 {
		rctx, cancel := context.WithTimeout(ctx, req.Timeout)
		sent := time.Now()
		var s string
		err := b.db.QueryRowContext(rctx, "SELECT UNIX_TIMESTAMP(SYSDATE(6))").Scan(&s)
		rtt := time.Since(sent)
		cancel()
		var secs float64
		if err == nil {
			secs, err = strconv.ParseFloat(s, 64)
		}
		if err != nil {
			return lock.Check{Name: "clock", Status: lock.CheckWarning,
				Detail: "cannot read the server's clock (SYSDATE(6)): " + err.Error(),
				Fix:    "make sure both clocks are synchronised (NTP)"}
		}
		if best < 0 || rtt < best {
			best = rtt
			server := time.Unix(0, int64(secs*1e9))
			offset = server.Sub(sent.Add(rtt / 2).Round(0))
		}
	}
	return lock.ClockOffsetCheck(offset, best/2, req.TTL, fmt.Sprintf("SYSDATE(6), best of 5 round trips: %s", best.Round(time.Microsecond)))
}
