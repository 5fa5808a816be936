package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// InstallRepositoryCRDs installs the repository's CRDs (config/crd/bases).
// As Config.BeforeControllers, it makes Databases known to the garbage
// collector from its start.
func InstallRepositoryCRDs(cfg *rest.Config) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
	})
	return err
}

// StopAfterTests stops the cluster at the end of a test binary whose exit
// code is *code: its logs are kept, and their place printed, when the tests
// failed, and *code becomes 1 when the cluster could not be stopped or left
// a process running.
func (c *Cluster) StopAfterTests(code *int) {
	stop := c.Stop
	if *code != 0 {
		stop = c.StopKeepingLogs
		fmt.Fprintf(os.Stderr, "control plane logs kept in %s\n", c.LogDir())
	}
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		*code = 1
	}
	if err := c.CheckStopped(); err != nil {
		fmt.Fprintf(os.Stderr, "processes left running: %v\n", err)
		*code = 1
	}
}
