package e2e_test

import (
	"os/exec"
	"path/filepath"

	. "github.com/onsi/gomega"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// kubectl runs the kubectl the control plane was built with, as the
// administrator, and returns its output.
func kubectl(g Gomega, args ...string) string {
	bin, err := localcluster.DefaultBinDir()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfigPath}, args...)...).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}
