package sqlstore

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor (the registry's tests check that it does):
// the server's clock, which judges every lease's expiry, against ours; the
// connections free; whether a crash keeps the grants.
func (s *Store) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	rctx := req.RequestContexts(ctx, 5*time.Second)
	clock := lock.ServerClockCheck(rctx, req.TTL, s.d.ClockName, 0, func(ctx context.Context) (time.Time, error) {
		var us int64
		err := s.queryRow(ctx, s.d.SQL.Clock, nil, &us)
		return time.UnixMicro(us), err
	})
	return []lock.Check{clock, s.headroomCheck(rctx), s.durabilityCheck(rctx)}
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

// durabilityCheck reads the settings that decide whether a commit, and so
// a grant, survives a crash of the server (Queries.Durability, as
// distlock's own sessions see them), and has the dialect judge them.
func (s *Store) durabilityCheck(rctx lock.RequestContext) lock.Check {
	ctx, cancel := rctx()
	defer cancel()
	settings := map[string]string{}
	err := s.d.Driver.Query(ctx, s.d.SQL.Durability, nil, func(scan Row) error {
		var name, value string
		if err := scan(&name, &value); err != nil {
			return err
		}
		settings[name] = value
		return nil
	})
	if err != nil {
		return lock.CannotCheck("durability", "read "+s.d.DurabilityReads, err,
			"run doctor again once the server answers; until then, ask its administrator whether a crash of the server keeps every commit")
	}
	return s.d.Durability(settings)
}
