// Package release builds this tree's distlock the way the release does, for
// the tools that measure or torture the binary users run (tools/bench,
// tools/torture).
package release

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// flags are .goreleaser.yaml's build flags (less its -X version stamps,
// which change no code path): a static, stripped binary.
var flags = []string{"-trimpath", "-ldflags", "-s -w"}

// Build builds the distlock of the module in the current directory at bin
// as the release does, and says how.
func Build(bin string) (string, error) {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", bin, ".")
	c := exec.Command("go", args...)
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	// Written back, the binary's pages in the page cache are clean: a
	// freshly written one's count as Private_Dirty in a lone process's
	// smaps until the kernel writes them (bench -scale's memory).
	if f, err := os.Open(bin); err == nil {
		f.Sync()
		f.Close()
	}
	v, _ := exec.Command("go", "env", "GOVERSION").Output()
	return fmt.Sprintf("CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' (as .goreleaser.yaml), %s", strings.TrimSpace(string(v))), nil
}
