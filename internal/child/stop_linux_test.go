package child

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A group whose shell forks all the time (dash and bash vfork for every
// external command) must count as stopped once SIGSTOP reached it, even
// when the stop caught a vfork child before its exec: the shell then waits
// in the kernel (state D) for a child that is stopped, and would never
// show T. distlock used to wait for it forever, spinning, and never
// stopped itself.
func TestGroupStoppedDuringVfork(t *testing.T) {
	sh := exec.Command("sh", "-c", "while :; do /bin/true; done")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := sh.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		syscall.Kill(-pgid, syscall.SIGCONT)
		sh.Wait()
	})
	p := &Process{pgid: pgid}
	var inVfork int
	for trial := range 150 {
		syscall.Kill(-pgid, syscall.SIGSTOP)
		deadline := time.Now().Add(3 * time.Second)
		for !p.allStopped(false) {
			if time.Now().After(deadline) {
				ms, _ := groupMembers(pgid, 0)
				t.Fatalf("trial %d: the group never counted as stopped after SIGSTOP: %+v", trial, ms)
			}
			time.Sleep(time.Millisecond)
		}
		if ms, _ := groupMembers(pgid, 0); len(ms) > 0 {
			for _, m := range ms {
				if m.state == 'D' {
					inVfork++
				}
			}
		}
		syscall.Kill(-pgid, syscall.SIGCONT)
		time.Sleep(time.Duration(trial%5) * time.Millisecond)
	}
	t.Logf("%d of 150 stops caught the shell in the kernel (D) with its child stopped", inVfork)
}
