//go:build tools

// Package consulserver only records the dependency on the Consul agent's main
// package, so that go mod tidy keeps it; the harness builds the agent with
// `go build github.com/hashicorp/consul`.
package consulserver

import _ "github.com/hashicorp/consul"
