package server

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A member that exits before answering ends the group's start at once
// with errExited (its callers then start again on fresh ports), even
// while the wait is on another member, which without a quorum never
// answers: the wait used to run to its deadline, a minute for consul3.
func TestGroupStartEndsWhenAnyMemberExits(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	never := func(ctx context.Context, pid int) error { return errors.New("no quorum") }
	start := time.Now()
	ps, err := startGroup(2, 1, time.Minute, func(i int, ports []int) (spec, error) {
		s := spec{name: "member", bin: sleep, dir: dir, args: []string{"60"}, logPath: filepath.Join(dir, "log0"), addr: "127.0.0.1:1", probe: never}
		if i == 1 { // the one whose port was taken: it exits at once
			s.bin, s.args, s.logPath = falseBin, nil, filepath.Join(dir, "log1")
		}
		return s, nil
	})
	if ps != nil {
		defer closeAll(ps)
	}
	if !errors.Is(err, errExited) {
		t.Fatalf("startGroup = %v; want errExited", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("startGroup took %s to see a member exit", took)
	}
}
