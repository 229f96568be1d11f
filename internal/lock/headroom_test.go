package lock

import (
	"strings"
	"testing"
)

func TestConnectionHeadroomCheck(t *testing.T) {
	for _, c := range []struct {
		used, limit int
		want        CheckStatus
		detail      string
	}{
		{10, 100, CheckOK, "10 of max_connections 100 in use: 90 free (90 %)"},
		{80, 100, CheckOK, "80 of max_connections 100 in use: 20 free (20 %)"},
		{81, 100, CheckWarning, "81 of max_connections 100 in use: 19 free (19 %)"},
		{105, 100, CheckWarning, "105 of max_connections 100 in use: 0 free (0 %)"},
		{7, 0, CheckOK, "7 connections in use; max_connections sets no limit"},
	} {
		got := ConnectionHeadroomCheck("max_connections", c.used, c.limit, "raise it")
		if got.Status != c.want || got.Detail != c.detail || got.Name != "connections" {
			t.Errorf("%d of %d: %+v; want %s, %q", c.used, c.limit, got, c.want, c.detail)
		}
		if (got.Status == CheckWarning) != strings.Contains(got.Fix, "raise it") {
			t.Errorf("%d of %d: fix %q", c.used, c.limit, got.Fix)
		}
	}
}
