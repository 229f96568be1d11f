package file

// The poke: a local break, which cannot take a flock from its holder,
// removes the record and sends the holding `distlock run` SIGWINCH ("check
// the lease now"), so it stops its command at once. A pid can be reused
// (a SIGKILLed distlock whose group watcher still holds the flock; a
// container with the same host name and a pid namespace of its own), and
// SIGWINCH is not harmless to every program (Apache httpd stops
// gracefully on it, nginx's master stops its workers): so the signal goes
// only to the very process that wrote the record, known by its procID
// (the boot, its pid namespace and its start time), which the holder
// records. Anywhere that cannot be made sure of (a record without one, by
// an older distlock; another machine or namespace; no /proc or pidfd) no
// signal is sent: the holder finds its record gone at its next renewal,
// within a third of its TTL, as on the other engines.

import (
	"os"

	"github.com/distlock/distlock/internal/procfs"
)

// pokeHolder pokes the process that holds m, a record just removed by a
// break on this machine, when it is sure to be the one that wrote m.
func (b *Backend) pokeHolder(m meta) {
	if m.Hold != "" || m.PID <= 0 || m.Host != b.host || m.ProcID == "" {
		return // a hold's process is gone; another machine's is not ours to signal
	}
	signalIfSame(m.PID, m.ProcID)
}

// ownProcID is procID(pid) when pid is this process's, else "": a record
// names a process to poke only when its writer is that process. Also ""
// when /proc is another pid namespace's (unshare -p without a new /proc:
// /proc/self is not our pid), where /proc/PID names someone else.
func ownProcID(pid int) string {
	if pid != os.Getpid() || !procfs.Own() {
		return ""
	}
	id, _ := procID(pid)
	return id
}
