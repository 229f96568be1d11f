package file

import "syscall"

// pokeHolder asks the distlock holding a lock on this machine to check its
// lease now. A flock cannot be taken from its holder, so a local `distlock
// break` removes the record that names the holder and then sends the
// holding process SIGWINCH, which `distlock run` documents as "check the
// lease now" (its default action is to ignore it, so a reused pid is not
// hurt): its keeper renews at once, finds the record gone and stops the
// command without waiting for the next renewal.
func pokeHolder(pid int) { syscall.Kill(pid, syscall.SIGWINCH) }
