package procfs

import "golang.org/x/sys/unix"

// isProc reports whether dir is a proc filesystem.
func isProc(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}
