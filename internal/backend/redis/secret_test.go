package redis

import (
	"fmt"
	"strings"
	"testing"
)

// No %v of a parsed config shows its password, whatever the topology.
func TestPrintedConfigHidesPassword(t *testing.T) {
	for raw, parse := range map[string]func(string) (Config, error){
		"redis://u:s3cretpw@h:6379/0":                          ParseURL,
		"redis+sentinel://u:s3cretpw@h:26379,g:26379/mymaster": ParseSentinelURL,
		"redis+cluster://u:s3cretpw@h:7000,g:7001":             ParseClusterURL,
	} {
		cfg, err := parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if s := fmt.Sprintf("%v %+v", cfg, cfg); strings.Contains(s, "s3cretpw") {
			t.Errorf("%s: printed as %s", raw, s)
		}
	}
	rl, err := ParseRedlockURL("redlock://:s3cretpw@a:1,b:2,c:3")
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v", rl, rl); strings.Contains(s, "s3cretpw") || !strings.Contains(s, "a:1,b:2,c:3") {
		t.Errorf("redlock config printed as %s", s)
	}
}
