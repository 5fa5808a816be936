package realnode_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// The load generators: PostgreSQL 15's (Debian's postgresql-15) and
// sysbench's (Debian's sysbench) for MariaDB.
const (
	pgbenchBinary  = "/usr/lib/postgresql/15/bin/pgbench"
	sysbenchBinary = "/usr/bin/sysbench"
)

// loadRun is a load generator's process run from the host against a
// Database's Service, bounded by its own time limit and stopped with the
// test at the latest.
type loadRun struct {
	name   string
	cmd    *exec.Cmd
	output bytes.Buffer
	done   chan error
}

// appCredentials are the Database's application user and password.
func appCredentials(g Gomega, db *dbpilotv1alpha1.Database) (user, password string) {
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(context.Background(), db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return string(secret.Data[desired.SecretKeyUsername]), string(secret.Data[desired.SecretKeyPassword])
}

// serviceIP is the cluster IP of one of the Database's Services.
func serviceIP(g Gomega, db *dbpilotv1alpha1.Database, service string) string {
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(context.Background(), service, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return svc.Spec.ClusterIP
}

// pgbench runs pgbench against the Service as the application user, with
// args; a script is written to a file and passed with -f.
func pgbench(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, service, script string, args ...string) *loadRun {
	user, password := appCredentials(g, db)
	if script != "" {
		path := filepath.Join(t.TempDir(), "script.sql")
		g.Expect(os.WriteFile(path, []byte(script), 0o600)).To(Succeed())
		args = append(args, "-f", path)
	}
	args = append(args, "-h", serviceIP(g, db, service), "-p", "5432", "-U", user, user)
	cmd := exec.Command(pgbenchBinary, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=10")
	return startLoad(t, g, "pgbench", cmd)
}

// sysbench runs a sysbench test against the Service as the application
// user, in its own database: args name the test, its options and the
// command (prepare, run). The connection options, password included, go
// in a private config file, never on the command line.
func sysbench(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, service string, args ...string) *loadRun {
	user, password := appCredentials(g, db)
	config := fmt.Sprintf("db-driver=mysql\nmysql-host=%s\nmysql-port=3306\nmysql-user=%s\nmysql-password=%s\nmysql-db=%s\n",
		serviceIP(g, db, service), user, password, user)
	path := filepath.Join(t.TempDir(), "sysbench.conf")
	g.Expect(os.WriteFile(path, []byte(config), 0o600)).To(Succeed())
	return startLoad(t, g, "sysbench", exec.Command(sysbenchBinary, append([]string{"--config-file=" + path}, args...)...))
}

// startLoad starts cmd in its own process group, killed with the test at
// the latest; its output is logged when the test fails.
func startLoad(t *testing.T, g Gomega, name string, cmd *exec.Cmd) *loadRun {
	run := &loadRun{name: name, cmd: cmd, done: make(chan error, 1)}
	run.cmd.Stdout, run.cmd.Stderr = &run.output, &run.output
	run.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	g.Expect(run.cmd.Start()).To(Succeed())
	go func() { run.done <- run.cmd.Wait() }()
	t.Cleanup(func() {
		run.stop()
		if t.Failed() {
			t.Logf("%s %v:\n%s", name, cmd.Args[1:], lastLines(run.output.String(), 20))
		}
	})
	return run
}

// running fails when the load has ended before its time.
func (r *loadRun) running(g Gomega) {
	select {
	case err := <-r.done:
		r.done <- err
		g.Expect(false).To(BeTrue(), "%s ended early (%v): %s", r.name, err, lastLines(r.output.String(), 20))
	default:
	}
}

// wait waits for the load to end on its own and returns its output.
func (r *loadRun) wait(g Gomega, timeout time.Duration) string {
	select {
	case err := <-r.done:
		r.done <- err
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", r.name, r.output.String())
	case <-time.After(timeout):
		r.stop()
		g.Expect(false).To(BeTrue(), "%s still ran after %s: %s", r.name, timeout, r.output.String())
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
