package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor (the registry's tests check that it does):
// the server's clock, which judges every lease's expiry, against ours
// (lock.ReadClock: best of a few round trips); the connections free.
func (s *Store) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	newCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, req.Timeout) }
	clock := lock.Check{Name: "clock", Status: lock.CheckWarning, Fix: "make sure both clocks are synchronised (NTP)"}
	offset, unc, best, err := lock.ReadClock(newCtx, func(ctx context.Context) (time.Time, error) {
		var us int64
		err := s.queryRow(ctx, s.d.SQL.Clock, nil, &us)
		return time.UnixMicro(us), err
	})
	if err != nil {
		clock.Detail = "cannot read the server's clock (" + s.d.ClockName + "): " + err.Error()
	} else {
		clock = lock.ClockOffsetCheck(offset, unc, req.TTL, fmt.Sprintf("%s, best of %d round trips: %s", s.d.ClockName, lock.ClockReadings, best.Round(time.Microsecond)))
	}
	return []lock.Check{clock, s.headroomCheck(ctx, req)}
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
