//go:build !(linux && (amd64 || arm64))

package child

import (
	"errors"
	"os"
)

// Here the watcher is distlock re-executed, given the lock files as it
// starts (the forking watcher of fork_linux.go, which can be forked ahead
// of the lock and handed them later, is written for Linux on amd64 and
// arm64 only).
const forkAhead = false

var errNoFork = errors.New("no forked group watcher on this platform")

func startWatcherFork() (*watcher, error) { return nil, errNoFork }

func (w *watcher) hand(keep []*os.File) error { return errNoFork }
