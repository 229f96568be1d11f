package redis

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// TLS for the multi-host URLs (redis+sentinel://, redis+cluster://,
// redlock://), as rediss:// is for one server: a TLS scheme
// (rediss+sentinel://, rediss+cluster://, redlocks://) or tls=true turns it
// on, and these parameters tune it:
//
//	tls=true|false             TLS to every node (and sentinel)
//	tls_ca=FILE                PEM CA bundle to verify the servers (default: the system's)
//	tls_server_name=NAME       the name to verify instead of each node's host
//	tls_insecure_skip_verify=true   do not verify the servers (testing only)
//
// Each node's certificate is verified against its own host unless
// tls_server_name is set (crypto/tls infers it from the address dialed).

// tlsParams are the query parameters takeTLS knows.
var tlsParams = []string{"tls", "tls_ca", "tls_server_name", "tls_insecure_skip_verify"}

// parseTLS parses raw by spec and takes its TLS parameters (takeTLS).
func parseTLS(raw string, spec urlx.Spec, scheme string) (urlx.URL, *tls.Config, error) {
	u, err := urlx.Parse(raw, spec)
	if err != nil {
		return u, nil, err
	}
	cfg, err := takeTLS(&u, scheme)
	return u, cfg, err
}

// takeTLS removes the TLS parameters from u.Query and returns the TLS
// configuration they and u's scheme ask for; nil means plain TCP.
func takeTLS(u *urlx.URL, scheme string) (*tls.Config, error) {
	on := u.TLS
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	tuned := false
	for k, vs := range u.Query {
		v := vs[len(vs)-1]
		switch k {
		case "tls", "tls_insecure_skip_verify":
			b, err := strconv.ParseBool(v)
			switch {
			case err != nil:
				return nil, lock.Invalidf("%s URL: %s=%q is not true or false", scheme, k, v)
			case k == "tls_insecure_skip_verify":
				cfg.InsecureSkipVerify, tuned = b, true
			case !b && u.TLS:
				return nil, lock.Invalidf("%s URL: tls=false contradicts the TLS scheme %s://", scheme, u.Scheme)
			default:
				on = b
			}
		case "tls_ca":
			pem, err := os.ReadFile(v)
			if err != nil {
				return nil, lock.Invalidf("%s URL: cannot read tls_ca: %v", scheme, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, lock.Invalidf("%s URL: tls_ca %s holds no PEM certificate", scheme, v)
			}
			cfg.RootCAs, tuned = pool, true
		case "tls_server_name":
			cfg.ServerName, tuned = v, true
		default:
			continue
		}
		delete(u.Query, k)
	}
	if tuned && !on {
		return nil, lock.Invalidf("%s URL: TLS parameters without TLS: add tls=true or use the TLS scheme (rediss+sentinel://, rediss+cluster://, redlocks://)", scheme)
	}
	if !on {
		return nil, nil
	}
	return cfg, nil
}
