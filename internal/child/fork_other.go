//go:build !(linux && (amd64 || arm64))

package child

import "os"

// newGroupWatcher starts the watcher that makes the command's group: here
// distlock re-executed (the forking watcher of fork_linux.go is written
// for Linux on amd64 and arm64 only).
func newGroupWatcher(keep []*os.File) (*watcher, error) { return startWatcher(0, keep) }
