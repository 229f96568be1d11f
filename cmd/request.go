package cmd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// newRequest describes this process asking for KEY; command is argv[0]
// only, since the full argv may hold secrets.
func newRequest(key string, ttl time.Duration, limit int, command, note string) (lock.Request, error) {
	owner, err := newOwner()
	if err != nil {
		return lock.Request{}, err
	}
	return lock.Request{
		Key: key, TTL: ttl, Owner: owner, Limit: limit,
		Meta: lock.Meta{Host: hostname(), PID: os.Getpid(), User: username(), Command: command, Note: note},
	}, nil
}

// busyError turns a busy result into the documented exit code and one line
// naming the holder; nil when err is not a busy error.
func busyError(err error, wait time.Duration, code int, quiet bool) error {
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		return nil
	}
	if quiet {
		return withCode(code)
	}
	hint := " (use --wait to wait for it)"
	if wait != 0 {
		hint = fmt.Sprintf(" (gave up after --wait %s)", wait)
	}
	return &statusError{code: code, msg: busy.Error() + hint}
}

func newOwner() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make an owner id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func username() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
