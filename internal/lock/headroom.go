package lock

import "fmt"

// HeadroomShare is the share of a server's connection limit that doctor
// wants free: below it, the next burst of distlock processes (each needs
// a connection to hold or wait for a lock: for its session on ZooKeeper,
// for each request on the SQL engines) may find none (issue 25). A
// PostgreSQL waiter listens for releases on a connection of its own only
// while this share stays free besides.
const HeadroomShare = 0.2

// ConnectionHeadroomCheck judges a server's connections: used of limit
// in use, as named by setting ("max_connections"); limit 0 is no limit.
// fix says how to raise the limit.
func ConnectionHeadroomCheck(setting string, used, limit int, fix string) Check {
	if limit <= 0 {
		return Check{Name: "connections", Status: CheckOK, Detail: fmt.Sprintf("%d connections in use; %s sets no limit", used, setting)}
	}
	free := limit - used
	detail := fmt.Sprintf("%d of %s %d in use: %d free (%.0f %%)", used, setting, limit, max(free, 0), 100*float64(max(free, 0))/float64(limit))
	if float64(free) < HeadroomShare*float64(limit) {
		return Check{Name: "connections", Status: CheckWarning, Detail: detail,
			Fix: fmt.Sprintf("each distlock process needs a connection to hold or wait for a lock, and is refused once %s is reached: %s", setting, fix)}
	}
	return Check{Name: "connections", Status: CheckOK, Detail: detail}
}
