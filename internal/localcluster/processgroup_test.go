package localcluster

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestRecordedGroupKilledOnlyWhileItsLeaderRuns: a crashed run's record
// names process groups by number, and by the next run the number may be
// another program's group. Only the group whose leader started when the
// record says is killed.
func TestRecordedGroupKilledOnlyWhileItsLeaderRuns(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	ours, err := recordGroup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	// The same number, led by a process that started at another time.
	reused := ours
	reused.LeaderStarted--
	reused.killIfStillOurs()
	select {
	case <-exited:
		t.Fatal("killed a group whose leader is not the recorded one")
	case <-time.After(500 * time.Millisecond):
	}

	ours.killIfStillOurs()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded group still runs")
	}
}
