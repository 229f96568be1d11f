package cmd

import (
	"crypto/rand"
	"encoding/hex"
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
