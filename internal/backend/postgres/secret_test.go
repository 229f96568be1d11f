package postgres

import (
	"fmt"
	"strings"
	"testing"
)

// No %v of a config shows its password, the URL's or --password-file's.
func TestPrintedConfigHidesPassword(t *testing.T) {
	cfg, err := ParseURL("postgres://u:s3cretpw@h:5432/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "s3cretpw" // as --password-file gives it
	if s := fmt.Sprintf("%v %+v", cfg, cfg); strings.Contains(s, "s3cretpw") || !strings.Contains(s, "/db") {
		t.Errorf("printed as %s", s)
	}
}
