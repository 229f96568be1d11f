package main

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM that the child cannot take yet (here: it is stopped; on a
// loaded machine: it waits for the CPU) is seen pending when it is sent,
// not when the child's TERM trap runs at last.
func TestPollDeathSeesTermPending(t *testing.T) {
	cmd := exec.Command("bash", "-c", `trap "exit 0" TERM; echo ready; while :; do sleep 0.01; done`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if _, err := out.Read(make([]byte, 6)); err != nil { // the trap is set
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	times := make(chan [2]time.Time, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		sent := time.Now()
		_ = syscall.Kill(pid, syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		times <- [2]time.Time{sent, time.Now()}
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}()
	d, err := pollDeath(pid, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tt := <-times
	sent, cont := tt[0], tt[1]
	switch {
	case d.termSeen.IsZero():
		t.Fatal("the pending SIGTERM was never seen")
	case d.termSeen.Before(sent):
		t.Fatalf("SIGTERM seen pending %s before it was sent", sent.Sub(d.termSeen))
	case !d.termSeen.Before(cont):
		t.Fatalf("SIGTERM seen pending only %s after the child was continued", d.termSeen.Sub(cont))
	}
	t.Logf("SIGTERM seen pending %s after it was sent; the child died %s after it was continued", d.termSeen.Sub(sent), d.dead.Sub(cont))
}
