package lock

import "time"

// NextToken is the fencing token rule, the same for every engine
// (docs/ARCHITECTURE.md, "Engines: key layout and token rule"): a new
// token of a key is
//
//	max(last token of this key + 1, a clock in µs)
//
// last is the greatest token the engine still knows it gave for the key
// (0 when it knows none); nowMicros is the engine's clock where it has
// one (Redis TIME, the database's now()), else distlock's own wall clock
// at the grant (etcd, ZooKeeper). The +1 keeps tokens strictly rising
// while the engine keeps its data; the clock keeps them rising when it
// lost it (restarted empty, rebuilt, restored from an older snapshot,
// failed over to a lagging replica), as long as the clock is sane.
//
// Engines that compute the token inside the engine (a Lua script, an SQL
// statement) apply this same rule there; each says where.
func NextToken(last, nowMicros uint64) uint64 {
	return max(last+1, nowMicros)
}

// ClockMicros is a wall clock reading in µs since 1970, as NextToken
// takes it (0 for a time before 1970).
func ClockMicros(t time.Time) uint64 {
	return uint64(max(t.UnixMicro(), 0))
}
