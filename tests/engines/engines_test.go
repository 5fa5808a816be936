// Package engines_test runs the configuration dbpilot ships into database
// pods against real PostgreSQL and MariaDB servers (Debian packages,
// started as plain processes on 127.0.0.1 in temporary directories).
package engines_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// database is a one-pod Database of the engine and tier.
func database(engine dbpilotv1alpha1.Engine, tier dbpilotv1alpha1.Tier) *dbpilotv1alpha1.Database {
	db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{
		Engine: engine, Tier: tier, Replicas: ptr.To[int32](1),
		Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
	}}
	db.Name, db.Namespace = "db", "ns"
	return db
}

// serviceUser is the unprivileged account a server runs as: PostgreSQL
// refuses to run as root.
type serviceUser struct {
	name     string
	uid, gid uint32
}

func lookupUser(t *testing.T, name string) serviceUser {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s not found (install the Debian packages with `make deps`): %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return serviceUser{name: name, uid: uint32(uid), gid: uint32(gid)}
}

// tempDir is a directory the service user owns, removed after the test.
func (u serviceUser) tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbpilot-engine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(u.uid), int(u.gid)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// command runs as the service user in its own process group.
func (u serviceUser) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid},
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	// The test's working directory may be closed to the service user (a
	// clone in a 0700 temporary directory); the root is open to everyone.
	cmd.Dir = "/"
	return cmd
}

// startServer starts cmd and stops its process group in cleanup, checking
// that nothing of it is left running.
func startServer(t *testing.T, cmd *exec.Cmd, logPath string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		select {
		case <-exited:
			// Reaped already: its group's number may be another's by now.
		default:
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-exited
			}
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			time.Sleep(100 * time.Millisecond)
			if err := syscall.Kill(-pgid, 0); err == nil {
				t.Errorf("processes of %s still running", cmd.Path)
			}
		}
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log:\n%s", filepath.Base(cmd.Path), log)
			}
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// eventually retries check every 200 ms for up to timeout.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeConfig writes the rendered configuration of db into dir.
func writeConfig(t *testing.T, dir string, db *dbpilotv1alpha1.Database) string {
	t.Helper()
	name, content := desired.EngineConfig(db)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// output runs cmd and returns what it printed on stdout; stderr (warnings
// included) goes into the error only, so it never pollutes a value.
func output(cmd *exec.Cmd) (string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s%s", cmd.Args, err, out, stderr.String())
	}
	return string(out), nil
}
