package consul

import (
	"errors"
	"testing"

	"github.com/hashicorp/consul/api"
)

// refused tells Consul's refusals from failures to reach it, whatever the
// addresses in the message spell (a port 40317 holds "403").
func TestRefusedOnlyForACLAnswers(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New(`Put "http://127.0.0.1:40317/v1/txn": dial tcp 127.0.0.1:40317: connect: connection refused`), false},
		{errors.New(`Get "http://127.0.0.1:44011/v1/kv/x": context deadline exceeded`), false},
		{api.StatusError{Code: 403, Body: "Permission denied"}, true},
		{api.StatusError{Code: 500, Body: "No cluster leader"}, false},
		{errors.New("Unexpected response code: 403"), true},
		{errors.New("Failed request: Permission denied: token lacks key:write"), true},
	} {
		if got := refused(c.err); got != c.want {
			t.Errorf("refused(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}
