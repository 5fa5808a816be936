// Package managerprocess runs the manager binary as the tests' and
// benchmarks' own child process: built from cmd/, started in its own process
// group, killed with SIGKILL and restarted, so chaos runs and benchmarks
// measure the real program.
package managerprocess

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// Build builds the manager binary (cmd/) into dir and returns its path.
func Build(dir string) (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", binary, "./cmd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd: %w: %s", err, out)
	}
	return binary, nil
}

// Slot runs one manager process at a time, the real binary, and
// restarts it after a kill; every process it starts is a new writer,
// named after the slot and a generation ("a3").
type Slot struct {
	// Kubeconfig is the file the processes reach the API server with,
	// from the next start on; empty means the environment's KUBECONFIG.
	Kubeconfig string

	name, binary, logDir string
	args                 []string

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

// NewSlot returns a slot named name that runs binary with args and writes
// each process's output to a file in logDir.
func NewSlot(name, binary, logDir string, args ...string) *Slot {
	return &Slot{name: name, binary: binary, logDir: logDir, args: args, deaths: map[string]time.Time{}}
}

// Writer names the slot's current process.
func (s *Slot) Writer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writerLocked()
}

func (s *Slot) writerLocked() string { return fmt.Sprintf("%s%d", s.name, s.generation) }

// Start runs a new process in its own process group, logging to a file
// named after its writer.
func (s *Slot) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.generation++
	log, err := os.Create(filepath.Join(s.logDir, s.writerLocked()+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binary, s.args...)
	cmd.Env = os.Environ()
	if s.Kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+s.Kubeconfig)
	}
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

// Alive reports whether the current process runs.
func (s *Slot) Alive() bool {
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

// Kill sends SIGKILL to the current process's group, waits for it to be
// gone, and returns the writer it was and when it was killed.
func (s *Slot) Kill() (string, time.Time) {
	s.mu.Lock()
	writer, cmd, exited := s.writerLocked(), s.cmd, s.exited
	at := time.Now()
	if _, dead := s.deaths[writer]; !dead {
		s.deaths[writer] = at
	}
	s.mu.Unlock()
	if cmd != nil {
		select {
		case <-exited:
			// Reaped already: its group's number may be another's by now.
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	return writer, at
}

// Death says when writer was killed or exited, if it did.
func (s *Slot) Death(writer string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.deaths[writer]
	return at, ok
}

// SelfExits counts the processes that exited without being killed.
func (s *Slot) SelfExits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exits
}

// LogTail is the end of every log the slot's processes wrote, for a
// failing test's report.
func (s *Slot) LogTail(lines int) string {
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

// Leads reports whether the current process runs and its log says it
// acquired the leader election Lease (client-go logs it once, on
// acquiring).
func (s *Slot) Leads() bool {
	if !s.Alive() {
		return false
	}
	data, err := os.ReadFile(filepath.Join(s.logDir, s.Writer()+".log"))
	return err == nil && strings.Contains(strings.ToLower(string(data)), "acquired lease")
}

// PID is the current process's ID, 0 before the first start.
func (s *Slot) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Name is the slot's name, the prefix of its writers.
func (s *Slot) Name() string { return s.name }
