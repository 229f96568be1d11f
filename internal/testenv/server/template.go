package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
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

// privateData is a server's data directory of its own (dataFromTemplate).
type privateData struct {
	dir     string  // the test's dir, absolute: the server's log goes there
	priv    string  // the private directory: the data, socket, pid file
	data    string  // priv/data
	acct    account // the server runs as acct
	cleanup func() error
}

// dataFromTemplate prepares dir (prepareDir) and gives a server of kind
// ("postgres", "mariadb") a data directory of its own, owned by the
// account for user (serverAccount): a copy of the machine's template
// (cachedTemplate, named after bins, server's --version, the account and
// kind's templateVersions, built by build) in a private directory
// (privateDir, prefixed short) that cleanup removes. dir/<kind>.data links
// to the copy, for whoever reads the test's dir.
func dataFromTemplate(dir, kind, short, user string, bins []string, server string, build func(data string, acct account) error) (d privateData, err error) {
	if d.dir, err = prepareDir(dir); err != nil {
		return d, err
	}
	if d.acct, err = serverAccount(user); err != nil {
		return d, err
	}
	version, err := exec.Command(server, "--version").Output()
	if err != nil {
		return d, fmt.Errorf("%s --version: %w", server, err)
	}
	parts := append(append([]string(nil), bins...), string(version), d.acct.name, templateVersions[kind])
	tmpl, err := cachedTemplate(templateName(kind, parts...), d.acct,
		func(data string) error { return build(data, d.acct) })
	if err != nil {
		return d, err
	}
	if d.priv, err = privateDir(short, d.acct); err != nil {
		return d, err
	}
	priv := d.priv
	d.cleanup = func() error { return os.RemoveAll(priv) }
	d.data = filepath.Join(d.priv, "data")
	if err := copyTree(tmpl, d.data, d.acct); err != nil {
		_ = d.cleanup()
		return d, fmt.Errorf("copy the %s template: %w", kind, err)
	}
	link := filepath.Join(d.dir, kind+".data")
	_ = os.Remove(link)
	_ = os.Symlink(d.data, link) // not needed by the server
	return d, nil
}

// templateVersions is the version of each kind's template recipe: a change
// to how a template is made bumps it, so that no machine keeps the old one.
var templateVersions = map[string]string{"postgres": "v2", "mariadb": "v1"}

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
