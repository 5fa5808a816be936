package realnode_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// lateToolsTimeout bounds the wait for a late tool: with Go's caches cold,
// make test builds them for about 20 minutes beside the suite.
const lateToolsTimeout = 30 * time.Minute

// waitForLateTool waits until the control plane's binary name (one of the
// late tools, which make test builds beside this suite) is there and no
// build of the late tools is going on: make holds bin/.late-tools.lock
// while it builds them.
func waitForLateTool(t *testing.T, name string) {
	t.Helper()
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(root, "bin", ".late-tools.lock")
	began := time.Now()
	for {
		built, err := lateToolBuilt(filepath.Join(binDir, name), lock)
		if err != nil {
			t.Fatal(err)
		}
		if built {
			if d := time.Since(began); d > time.Second {
				t.Logf("waited %.0fs for %s to be built", d.Seconds(), name)
			}
			return
		}
		if time.Since(began) > lateToolsTimeout {
			t.Fatalf("%s is not built after %s (make test builds it beside this suite; make controlplane builds it)", name, lateToolsTimeout)
		}
		time.Sleep(2 * time.Second)
	}
}

// lateToolBuilt says whether the binary is there and the lock free (no
// build going on; a missing lock file is free).
func lateToolBuilt(binary, lock string) (bool, error) {
	if _, err := os.Stat(binary); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	f, err := os.Open(lock)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
