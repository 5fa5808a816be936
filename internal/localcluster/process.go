package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one control-plane binary running in its own process group, with
// its output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error
}

// startProcess starts binary with args in a new process group, logging to
// logDir/name.log. The group lets Stop reach every child the binary forks.
func startProcess(name, binary string, args []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Setpgid puts the process in its own group, so a Ctrl-C meant for the
	// parent does not reach it before the parent can stop things in order;
	// Pdeathsig kills it if the parent dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, waits up to grace for the process
// to exit, then kills the group. Data directories must only be removed after
// stop returns: etcd and kube-apiserver hang in their graceful shutdown when
// their files vanish first.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return groupGone(p.pid())
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.exited
	}
	// Children that outlived the leader are killed with the group.
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	return waitGroupGone(p.pid(), 5*time.Second)
}

// groupGone returns an error when any process of the group still exists.
func groupGone(pgid int) error {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("process group %d still has processes (kill -0: %v)", pgid, err)
}

func waitGroupGone(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := groupGone(pgid)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
