// Command distlock runs a command while holding a lease-based lock on a
// shared engine, so that across many machines at most one copy runs.
package main

import (
	"context"
	"os"

	"github.com/distlock/distlock/cmd"
)

func main() {
	os.Exit(cmd.Execute(context.Background()))
}
