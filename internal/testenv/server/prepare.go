package server

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// What a server needs before it starts: its binary, its directory, its
// config file and its environment.

// ErrNoBinary is returned (wrapped) by StartRedis and StartEtcd when the
// server binary is not on PATH.
var ErrNoBinary = errors.New("server binary not found on PATH")

// lookBinary resolves name on PATH, wrapping ErrNoBinary when missing.
func lookBinary(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoBinary, name)
	}
	return path, nil
}

// binAndDir resolves the binary name (lookBinary) and prepares dir
// (prepareDir).
func binAndDir(name, dir string) (bin, abs string, err error) {
	if bin, err = lookBinary(name); err != nil {
		return "", "", err
	}
	if abs, err = prepareDir(dir); err != nil {
		return "", "", err
	}
	return bin, abs, nil
}

// prepareDir makes dir absolute and makes sure it exists.
func prepareDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return abs, nil
}

// writeLines writes lines to path, each ended by a newline.
func writeLines(path string, lines []string) error {
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// envWithout is the test's environment without the variables whose names
// start with one of prefixes.
func envWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// Available reports nil when the binaries of server kind ("redis", "etcd",
// "zookeeper", "postgres", "mariadb", "consul") are installed, else an error wrapping
// ErrNoBinary that names what is missing.
func Available(kind string) error {
	var err error
	switch kind {
	case "redis":
		_, err = lookBinary("redis-server")
	case "etcd":
		_, err = lookBinary("etcd")
	case "zookeeper":
		_, _, err = lookZooKeeper()
	case "postgres":
		_, _, err = lookPostgres()
	case "mariadb":
		if _, err = lookSbin("mariadbd", "mysqld"); err == nil {
			_, err = lookSbin("mariadb-install-db", "mysql_install_db")
		}
	case "consul":
		_, err = consulBinary()
	default:
		err = fmt.Errorf("unknown server kind %q", kind)
	}
	return err
}
