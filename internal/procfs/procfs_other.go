//go:build !linux

package procfs

// isProc: only Linux's /proc is read.
func isProc(dir string) bool { return false }
