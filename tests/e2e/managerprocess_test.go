package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// buildManager builds the manager binary (cmd/) into dir.
func buildManager(t testing.TB, dir string) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", binary, "./cmd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd: %v: %s", err, out)
	}
	return binary
}

// managerSlot runs one manager process at a time, the real binary, and
// restarts it after a kill; every process it starts is a new writer,
// named after the slot and a generation ("a3").
type managerSlot struct {
	name, binary, kubeconfig, logDir string
	args                             []string

	mu         sync.Mutex
	generation int
	cmd        *exec.Cmd
	exited     chan struct{}
	// deaths maps each writer that stopped to when it was killed or,
	// when it exited on its own, when its exit was noticed.
	deaths map[string]time.Time
	// exits counts the processes that exited without being killed.
	exits int
}

func newManagerSlot(name, binary, kubeconfig, logDir string, args ...string) *managerSlot {
	return &managerSlot{name: name, binary: binary, kubeconfig: kubeconfig, logDir: logDir, args: args, deaths: map[string]time.Time{}}
}

// writer names the slot's current process.
func (s *managerSlot) writer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writerLocked()
}

func (s *managerSlot) writerLocked() string { return fmt.Sprintf("%s%d", s.name, s.generation) }

// start runs a new process in its own process group, logging to a file
// named after its writer.
func (s *managerSlot) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.generation++
	log, err := os.Create(filepath.Join(s.logDir, s.writerLocked()+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binary, s.args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	writer := s.writerLocked()
	go func() {
		_ = cmd.Wait()
		log.Close()
		s.mu.Lock()
		if _, killed := s.deaths[writer]; !killed {
			s.deaths[writer] = time.Now()
			s.exits++
		}
		s.mu.Unlock()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return nil
}

// alive reports whether the current process runs.
func (s *managerSlot) alive() bool {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the current process's group, waits for it to be
// gone, and returns the writer it was and when it was killed.
func (s *managerSlot) kill() (string, time.Time) {
	s.mu.Lock()
	writer, cmd, exited := s.writerLocked(), s.cmd, s.exited
	at := time.Now()
	if _, dead := s.deaths[writer]; !dead {
		s.deaths[writer] = at
	}
	s.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return writer, at
}

// death says when writer was killed or exited, if it did.
func (s *managerSlot) death(writer string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.deaths[writer]
	return at, ok
}

// selfExits counts the processes that exited without being killed.
func (s *managerSlot) selfExits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exits
}

// logTail is the end of every log the slot's processes wrote, for a
// failing test's report.
func (s *managerSlot) logTail(lines int) string {
	var b strings.Builder
	s.mu.Lock()
	generations := s.generation
	s.mu.Unlock()
	for g := 1; g <= generations; g++ {
		name := fmt.Sprintf("%s%d", s.name, g)
		data, err := os.ReadFile(filepath.Join(s.logDir, name+".log"))
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", name, lines, strings.Join(all[max(len(all)-lines, 0):], "\n"))
	}
	return b.String()
}
