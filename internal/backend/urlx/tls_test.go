package urlx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

func TestTLSFiles(t *testing.T) {
	spec := etcdLike
	spec.Params = []string{"cacert", "cert", "key"}
	for _, tc := range []struct {
		raw  string
		want TLSFiles
		err  string
	}{
		{"es://h?cacert=/ca&cert=/c&key=/k", TLSFiles{CACert: "/ca", Cert: "/c", Key: "/k"}, ""},
		{"es://h", TLSFiles{}, ""},
		{"e://h", TLSFiles{}, ""},
		{"e://h?cacert=/ca", TLSFiles{}, "e TLS files (cacert, cert, key) need TLS: use es:// instead of e://"},
		{"es://h?key=/k", TLSFiles{}, "e client certificate needs both cert and key files"},
		{"es://h?cacert=", TLSFiles{}, `e URL parameter "cacert" needs exactly one non-empty value`},
		{"es://h?cert=/c&key=/k&key=/k", TLSFiles{}, `e URL parameter "key" needs exactly one non-empty value`},
	} {
		u, err := Parse(tc.raw, spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.raw, err)
		}
		got, err := u.TLSFiles(spec)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.raw, got, err, tc.want)
		case tc.err != "" && (!errors.Is(err, lock.ErrInvalid) || err.Error() != tc.err):
			t.Errorf("%q: %v; want %q", tc.raw, err, tc.err)
		}
	}
}

func TestCAPoolWordsItsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "none.pem"): "cannot read the CA: open " + filepath.Join(dir, "none.pem") + ": no such file or directory",
		notPEM:                         "CA " + notPEM + " holds no PEM certificate",
	} {
		pool, err := CAPool(file, "cannot read the CA: %v", "CA %s holds no PEM certificate")
		if pool != nil || !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("CAPool(%s) = %v, %v; want %q", file, pool, err, want)
		}
	}
}
