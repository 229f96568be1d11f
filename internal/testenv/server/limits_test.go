package server

import (
	"slices"
	"testing"
)

func TestLimitSettings(t *testing.T) {
	if got := limitArgs(ServerDefault, "-c", "max_connections="); got != nil {
		t.Errorf("limitArgs(ServerDefault) = %q, want nothing: the server's default", got)
	}
	if got := limitArgs(7, "-c", "max_connections="); !slices.Equal(got, []string{"-c", "max_connections=7"}) {
		t.Errorf("limitArgs(7) = %q", got)
	}
	if got := zkCnxnsLine(ServerDefault); got != "" {
		t.Errorf("zkCnxnsLine(ServerDefault) = %q, want none", got)
	}
	if got := zkCnxnsLine(0); got != "maxClientCnxns=0" {
		t.Errorf("zkCnxnsLine(0) = %q", got)
	}
}
