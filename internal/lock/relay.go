package lock

// Relay turns a blocking wait for an engine's events (a notification, a
// watch's read) into a Polling.Wake channel: it calls next in a goroutine
// until next fails, and after each call that returns nil sends on ch
// without blocking (a value already waiting stands for this one: a waiter
// only needs to know that something happened). done is closed once next
// has failed; the caller ends the wait by making next fail (closing what
// it reads, cancelling its context).
func Relay(next func() error) (ch <-chan struct{}, done <-chan struct{}) {
	out := make(chan struct{}, 1)
	return out, RelayTo(out, next)
}

// RelayTo is Relay onto out, a channel the caller made: several relays
// may share one, for a wait on several sources (Redis's subscriptions on
// several channels or servers).
func RelayTo(out chan<- struct{}, next func() error) (done <-chan struct{}) {
	end := make(chan struct{})
	go func() {
		defer close(end)
		for next() == nil {
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return end
}
