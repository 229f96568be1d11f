package urlx

import (
	"crypto/x509"
	"maps"
	"os"
	"slices"

	"github.com/distlock/distlock/internal/lock"
)

// TLSFiles are the PEM files of a TLS client, the query parameters
// cacert, cert and key (etcd, Consul): CACert empty means the system
// roots; Cert and Key, both or neither, are the client certificate.
type TLSFiles struct{ CACert, Cert, Key string }

// TLSFiles reads the TLS files from the query, whose parameters (the
// spec's Params: cacert, cert and key) must each have exactly one
// non-empty value, and checks them (Check).
func (u URL) TLSFiles(spec Spec) (TLSFiles, error) {
	for _, name := range slices.Sorted(maps.Keys(u.Query)) {
		if vals := u.Query[name]; len(vals) != 1 || vals[0] == "" {
			return TLSFiles{}, spec.invalid(" parameter %q needs exactly one non-empty value", name)
		}
	}
	f := TLSFiles{CACert: u.Query.Get("cacert"), Cert: u.Query.Get("cert"), Key: u.Query.Get("key")}
	return f, f.Check(spec, u.TLS)
}

// Check says whether the files make sense: they need TLS (the spec's TLS
// scheme), and a client certificate needs both its cert and its key.
func (f TLSFiles) Check(spec Spec, tls bool) error {
	if !tls && f != (TLSFiles{}) {
		return lock.Invalidf("%s TLS files (cacert, cert, key) need TLS: use %s:// instead of %s://", spec.Name, spec.TLSScheme, spec.Scheme)
	}
	if (f.Cert == "") != (f.Key == "") {
		return lock.Invalidf("%s client certificate needs both cert and key files", spec.Name)
	}
	return nil
}

// CAPool reads a PEM CA bundle (etcd's cacert, Redis's tls_ca). Its
// errors are lock.ErrInvalid in the engine's words: unreadable formats
// the read error, noPEM the file's name (a file without a certificate).
func CAPool(file, unreadable, noPEM string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, lock.Invalidf(unreadable, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, lock.Invalidf(noPEM, file)
	}
	return pool, nil
}
