package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// releaseFlags are .goreleaser.yaml's build flags (less its -X version
// stamps, which change no code path): a static, stripped binary.
var releaseFlags = []string{"-trimpath", "-ldflags", "-s -w"}

// build builds this tree's distlock at bin as the release does and says how.
func build(bin string) (string, error) {
	args := append([]string{"build"}, releaseFlags...)
	args = append(args, "-o", bin, ".")
	c := exec.Command("go", args...)
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	// Written back, the binary's pages in the page cache are clean: a
	// freshly written one's count as Private_Dirty in a lone process's
	// smaps until the kernel writes them (the scale mode's memory).
	if f, err := os.Open(bin); err == nil {
		f.Sync()
		f.Close()
	}
	v, _ := exec.Command("go", "env", "GOVERSION").Output()
	return fmt.Sprintf("CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' (as .goreleaser.yaml), %s", strings.TrimSpace(string(v))), nil
}
