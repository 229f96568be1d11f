package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// templateDone marks a complete template: a build that died half-way
// leaves none, and is built again.
const templateDone = ".distlock-template-complete"

// templateName names a template by what it was made from (binary paths,
// versions, options), so that a package upgrade builds a new one.
func templateName(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return kind + "-" + hex.EncodeToString(h[:6])
}

// cachedTemplate returns the path of a data directory template called name
// (see templateName), building it first if this machine has none:
// build(dir) must create the data directory dir (its parent exists and
// belongs to a) and leave nothing running. Templates live under
// privateBase()/templates and are kept across test runs, like a build
// cache: initializing a data directory takes seconds (initdb ~1.2s,
// mariadb-install-db ~3s), copying one a few hundred milliseconds. Test
// processes that need the same template at once build it once (flock).
func cachedTemplate(name string, a account, build func(dir string) error) (string, error) {
	base, err := privateBase()
	if err != nil {
		return "", err
	}
	tdir := filepath.Join(base, "templates")
	if err := os.Mkdir(tdir, 0o711); err != nil && !os.IsExist(err) {
		return "", err
	}
	final := filepath.Join(tdir, name)
	if _, err := os.Stat(filepath.Join(final, templateDone)); err == nil {
		return final, nil
	}

	lf, err := os.OpenFile(final+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lf.Name(), err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(final, templateDone)); err == nil {
		return final, nil // built by another process meanwhile
	}
	if err := os.RemoveAll(final); err != nil { // an incomplete one
		return "", err
	}

	tmp, err := os.MkdirTemp(tdir, name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return "", err
	}
	if err := a.chown(tmp); err != nil {
		return "", err
	}
	data := filepath.Join(tmp, "data")
	if err := build(data); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(data, templateDone), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(data, final); err != nil {
		return "", err
	}
	return final, nil
}

// copyTree copies the template src to dst (which must not exist), files,
// directories and symlinks with their modes, every entry owned by a.
func copyTree(src, dst string, a account) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == templateDone {
			return nil
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(to, info.Mode().Perm()); err != nil { // past the umask
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil // sockets, pipes: nothing a data directory needs
		}
		return a.chown(to)
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(to, perm)
}
