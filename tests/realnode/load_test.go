package realnode_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// The in-process operator's auto-pilot: short windows, so real load moves
// it within minutes (the flags of the same names set them in the binary).
// The rate window holds four of cAdvisor's samples, which come every 15 s
// whatever the scrape interval.
const (
	autopilotInterval   = 5 * time.Second
	autopilotSettleTime = 75 * time.Second
	autopilotFlapWindow = time.Minute
	autopilotRateWindow = time.Minute
)

// autopilotSource is the in-process auto-pilot's Prometheus: none until a
// test points it at one (the auto-pilot then holds, as a manager started
// without --prometheus-url does).
var autopilotSource switchableSource

// switchableSource is a metrics source a test sets and unsets.
type switchableSource struct {
	mu     sync.Mutex
	source *promsource.Source
}

func (s *switchableSource) use(source *promsource.Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.source = source
}

// Snapshot reads the current source.
func (s *switchableSource) Snapshot(ctx context.Context, at time.Time) (promsource.Snapshot, error) {
	s.mu.Lock()
	source := s.source
	s.mu.Unlock()
	if source == nil {
		return promsource.Snapshot{}, errors.New("no Prometheus is configured")
	}
	return source.Snapshot(ctx, at)
}

// pgbenchBinary is PostgreSQL 15's load generator (Debian's postgresql-15).
const pgbenchBinary = "/usr/lib/postgresql/15/bin/pgbench"

// loadRun is a pgbench process run from the host against a Database's
// Service, bounded by its own -T and stopped with the test at the latest.
type loadRun struct {
	cmd    *exec.Cmd
	output bytes.Buffer
	done   chan error
}

// pgbench runs pgbench against the Service as the application user, with
// args; a script is written to a file and passed with -f.
func pgbench(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, service, script string, args ...string) *loadRun {
	ctx := context.Background()
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, service, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	user := string(secret.Data[desired.SecretKeyUsername])
	if script != "" {
		path := filepath.Join(t.TempDir(), "script.sql")
		g.Expect(os.WriteFile(path, []byte(script), 0o600)).To(Succeed())
		args = append(args, "-f", path)
	}
	args = append(args, "-h", svc.Spec.ClusterIP, "-p", "5432", "-U", user, user)
	run := &loadRun{cmd: exec.Command(pgbenchBinary, args...), done: make(chan error, 1)}
	run.cmd.Env = append(os.Environ(), "PGPASSWORD="+string(secret.Data[desired.SecretKeyPassword]), "PGCONNECT_TIMEOUT=10")
	run.cmd.Stdout, run.cmd.Stderr = &run.output, &run.output
	run.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	g.Expect(run.cmd.Start()).To(Succeed())
	go func() { run.done <- run.cmd.Wait() }()
	t.Cleanup(func() {
		run.stop()
		if t.Failed() {
			t.Logf("pgbench %v:\n%s", args, lastLines(run.output.String(), 20))
		}
	})
	return run
}

// running fails when pgbench has ended before its time.
func (r *loadRun) running(g Gomega) {
	select {
	case err := <-r.done:
		r.done <- err
		g.Expect(false).To(BeTrue(), "pgbench ended early (%v): %s", err, lastLines(r.output.String(), 20))
	default:
	}
}

// wait waits for pgbench to end on its own and returns its output.
func (r *loadRun) wait(g Gomega, timeout time.Duration) string {
	select {
	case err := <-r.done:
		r.done <- err
		g.Expect(err).NotTo(HaveOccurred(), "pgbench: %s", r.output.String())
	case <-time.After(timeout):
		r.stop()
		g.Expect(false).To(BeTrue(), "pgbench still ran after %s: %s", timeout, r.output.String())
	}
	return r.output.String()
}

// stop ends the load (its process group) and waits for it.
func (r *loadRun) stop() {
	select {
	case err := <-r.done:
		r.done <- err
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	err := <-r.done
	r.done <- err
}
