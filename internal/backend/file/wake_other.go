//go:build !linux

package file

import (
	"context"
	"errors"
	"os"
)

// Without inotify a waiter polls (see wake_linux.go).
func touchReleased(*os.File) {}

func watchReleases(context.Context, string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("no release notification on this platform")
}
