package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Doctor = (*Store)(nil)

// Doctor implements lock.Doctor: the server's clock, which judges every
// lease's expiry, against ours; the connections free.
func (s *Store) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	return []lock.Check{s.clockCheck(ctx, req), s.headroomCheck(ctx, req)}
}

// clockCheck reads the server's clock (lock.ReadClock: best of a few
// round trips).
func (s *Store) clockCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	newCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, req.Timeout) }
	offset, unc, best, err := lock.ReadClock(newCtx, s.d.Clock.Read)
	if err != nil {
		return lock.Check{Name: "clock", Status: lock.CheckWarning,
			Detail: "cannot read the server's clock (" + s.d.Clock.Name + "): " + err.Error(),
			Fix:    "make sure both clocks are synchronised (NTP)"}
	}
	return lock.ClockOffsetCheck(offset, unc, req.TTL, fmt.Sprintf("%s, best of %d round trips: %s", s.d.Clock.Name, lock.ClockReadings, best.Round(time.Microsecond)))
}

// headroomCheck compares the connections in use with the server's limit.
func (s *Store) headroomCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	setting, used, limit, err := s.d.Connections.Read(cctx)
	if err != nil {
		return lock.Check{Name: "connections", Status: lock.CheckWarning,
			Detail: "cannot read " + s.d.Connections.Reads + ": " + FirstLine(err.Error()),
			Fix:    "run doctor again once the server answers"}
	}
	return lock.ConnectionHeadroomCheck(setting, used, limit, s.d.Connections.Fix)
}
