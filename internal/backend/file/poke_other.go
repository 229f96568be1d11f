//go:build !linux

package file

// Outside Linux there is no /proc to tell a process's start time, so no
// record names a process sure enough to signal: no poke (poke.go).

func procID(pid int) (string, bool) { return "", false }

func signalIfSame(pid int, id string) {}
