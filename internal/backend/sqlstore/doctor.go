package sqlstore

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor (the registry's tests check that it does):
// the server's clock, which judges every lease's expiry, against ours; the
// connections free.
func (s *Store) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	rctx := req.RequestContexts(ctx, 5*time.Second)
	clock := lock.ServerClockCheck(rctx, req.TTL, s.d.ClockName, 0, func(ctx context.Context) (time.Time, error) {
		var us int64
		err := s.queryRow(ctx, s.d.SQL.Clock, nil, &us)
		return time.UnixMicro(us), err
	})
	return []lock.Check{clock, s.headroomCheck(rctx)}
}

// headroomCheck compares the connections in use with the server's limit.
func (s *Store) headroomCheck(rctx lock.RequestContext) lock.Check {
	ctx, cancel := rctx()
	defer cancel()
	setting, used, limit, err := s.d.Headroom(ctx)
	if err != nil {
		return lock.CannotCheck("connections", "read "+s.d.HeadroomReads, err, "run doctor again once the server answers")
	}
	return lock.ConnectionHeadroomCheck(setting, used, limit, s.d.HeadroomFix)
}
