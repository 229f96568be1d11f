package redis

import (
	"strings"
	"testing"
)

func TestTLSForMultiHostURLs(t *testing.T) {
	for _, tc := range []struct {
		url     string
		tls     bool
		wantErr string
	}{
		{"redis+sentinel://s1:26379,s2:26379/mymaster", false, ""},
		{"redis+sentinel://s1:26379,s2:26379/mymaster?tls=true&wait=1", true, ""},
		{"rediss+sentinel://s1:26379/mymaster", true, ""},
		{"rediss+sentinel://s1:26379/mymaster?tls=false", false, "contradicts"},
		{"redis+cluster://n1:6379,n2:6379?tls=true", true, ""},
		{"rediss+cluster://n1:6379,n2:6379?tls_server_name=redis.internal", true, ""},
		{"redis+cluster://n1:6379?tls_insecure_skip_verify=true", false, "without TLS"},
		{"redis+cluster://n1:6379?tls=maybe", false, "not true or false"},
		{"redis+cluster://n1:6379?tls_ca=/nonexistent.pem&tls=true", false, "cannot read tls_ca"},
		{"redis+cluster://n1:6379?bogus=1", false, "unknown parameter"},
		{"redlock://a:1,b:2,c:3?tls=true", true, ""},
		{"redlocks://a:1,b:2,c:3", true, ""},
		{"redlock://a:1,b:2,c:3?db=1", false, "no parameters but tls"},
	} {
		var on bool
		var err error
		switch {
		case strings.Contains(tc.url, "sentinel"):
			var cfg Config
			if cfg, err = ParseSentinelURL(tc.url); err == nil {
				on = cfg.Failover.TLSConfig != nil
			}
		case strings.Contains(tc.url, "cluster"):
			var cfg Config
			if cfg, err = ParseClusterURL(tc.url); err == nil {
				on = cfg.Cluster.TLSConfig != nil
				if on && strings.Contains(tc.url, "tls_server_name") && cfg.Cluster.TLSConfig.ServerName != "redis.internal" {
					t.Errorf("%s: ServerName %q", tc.url, cfg.Cluster.TLSConfig.ServerName)
				}
			}
		default:
			var cfg Config
			if cfg, err = ParseRedlockURL(tc.url); err == nil {
				on = cfg.Masters[0].TLSConfig != nil && cfg.Masters[2].TLSConfig != nil
			}
		}
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.url, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.wantErr == "" && on != tc.tls:
			t.Errorf("%s: TLS %v, want %v", tc.url, on, tc.tls)
		}
	}
}
