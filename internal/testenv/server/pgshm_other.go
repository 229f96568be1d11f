//go:build !linux

package server

// removePostgresShm is a no-op off Linux (see pgshm_linux.go).
func removePostgresShm(string) {}
