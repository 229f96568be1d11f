package file

import "syscall"

// pokeHolder asks the distlock holding a lock on this machine to check its
// lease now: a local break, which cannot take a flock from its holder,
// removes the record and sends SIGWINCH ("check the lease now" to
// `distlock run`; ignored by default, so a reused pid is not hurt).
func pokeHolder(pid int) { syscall.Kill(pid, syscall.SIGWINCH) }
