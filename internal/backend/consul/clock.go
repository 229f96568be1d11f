package consul

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// dateSeen is an http.RoundTripper that remembers the Date header of the
// last answer, with the local times just before the request was sent and
// just after its answer came: the doctor's clock check reads the server's
// clock from it, through the official client's own requests.
type dateSeen struct {
	next http.RoundTripper

	mu         sync.Mutex
	date       time.Time
	sent, recv time.Time
}

func (d *dateSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := d.next.RoundTrip(r)
	if err == nil {
		if t, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.mu.Lock()
			d.date, d.sent, d.recv = t, sent, time.Now()
			d.mu.Unlock()
		}
	}
	return resp, err
}

// last is the last Date seen and when its request went and came back.
func (d *dateSeen) last() (date, sent, recv time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.date, d.sent, d.recv
}

// clockCheck compares the server's clock with ours. Date has whole
// seconds, so it asks until the second turns (at most ~1.2 s, a request
// every 20 ms): the turn happened between the last request that showed
// the old second being sent and the first that showed the new one coming
// back, which bounds the offset to about a round trip.
func (b *Backend) clockCheck(ctx context.Context, ttl time.Duration) lock.Check {
	d := b.dates[b.cur.Load()]
	ask := func() (time.Time, time.Time, time.Time, error) {
		err := b.call(func(c *api.Client) error { _, err := c.Status().LeaderWithQueryOptions(qo(ctx)); return err })
		date, sent, recv := d.last()
		return date, sent, recv, err
	}
	first, prevSent, _, err := ask()
	deadline := time.Now().Add(1500 * time.Millisecond)
	for err == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		date, sent, recv, aerr := ask()
		if err = aerr; err == nil && date.After(first) {
			mid := prevSent.Add(recv.Sub(prevSent) / 2)
			return lock.ClockOffsetCheck(date.Sub(mid), recv.Sub(prevSent)/2, ttl, "the second of the server's Date header turning")
		}
		prevSent = sent
	}
	return lock.Check{Name: "clock", Status: lock.CheckWarning, Detail: "could not read the server's clock (its Date header did not turn)", Fix: "check that the Consul servers answer; then run doctor again"}
}
