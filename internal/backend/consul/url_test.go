package consul

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		raw, addrs, token, root string
		tls                     bool
	}{
		{"consul://c1", "c1:8500", "", "distlock", false},
		{"consul://c1:8600,c2", "c1:8600,c2:8500", "", "distlock", false},
		{"consuls://:s%2Fecret@c1/apps/ci", "c1:8501", "s/ecret", "apps/ci/distlock", true},
		{"consul://[::1]:8500/", "[::1]:8500", "", "distlock", false},
	} {
		cfg, err := ParseURL(c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if got := strings.Join(cfg.Addrs, ","); got != c.addrs || cfg.Token != c.token || cfg.root() != c.root || cfg.TLS != c.tls {
			t.Errorf("%s: addrs %s token %q root %q tls %v", c.raw, got, cfg.Token, cfg.root(), cfg.TLS)
		}
		if s := fmt.Sprintf("%v", cfg); strings.Contains(s, "ecret") {
			t.Errorf("%s: a printed Config shows the token: %s", c.raw, s)
		}
	}
}

// Mistakes are usage errors that never echo the token.
func TestParseURLRefuses(t *testing.T) {
	for _, raw := range []string{
		"consul://",
		"consul://tok3n@c1",         // a token where a user name goes would be shown unredacted
		"consul://c1?cacert=ca.pem", // TLS files without TLS
		"consuls://c1?cert=c.pem",   // a certificate without its key
		"consul://c1?bogus=1",
		"consul://c1:99999",
		"consul://c1,,c2",
		"etcd://c1",
	} {
		_, err := ParseURL(raw)
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v, want a usage error", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "tok3n") {
			t.Errorf("%s: the error shows the token: %v", raw, err)
		}
	}
}

// Consul's refusal of a session TTL becomes a usage error with its bounds.
func TestTTLRefusedNamesBounds(t *testing.T) {
	err := ttlRefused(5e8, errors.New("Unexpected response code: 500 (Invalid Session TTL '500000000', must be between [10s=24h0m0s])"))
	var te *ttlError
	if !errors.As(err, &te) || !errors.Is(err, lock.ErrInvalid) || te.least.String() != "10s" {
		t.Fatalf("ttlRefused: %v", err)
	}
	if !strings.Contains(err.Error(), "it allows 10s to 24h0m0s") {
		t.Fatalf("message: %v", err)
	}
	if ttlRefused(5e8, errors.New("connection refused")) != nil {
		t.Fatal("a failure to reach Consul read as a TTL refusal")
	}
}
