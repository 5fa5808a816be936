package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// BinDirEnv overrides where the control-plane binaries are found.
const BinDirEnv = "DBPILOT_CONTROLPLANE_BIN"

// Binaries are the paths of the control-plane programs. `make controlplane`
// builds them at pinned versions into bin/controlplane, which is also the
// BinaryAssetsDirectory of controller-runtime's envtest.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kwok              string
	Kubectl           string
	// Kubelet, KubeProxy and CoreDNS run the real node.
	Kubelet   string
	KubeProxy string
	CoreDNS   string
	// StagesDir holds kwok's Stage manifests (node and pod lifecycles).
	StagesDir string
}

// BinariesIn returns the binaries laid out as `make controlplane` does in dir.
func BinariesIn(dir string) Binaries {
	return Binaries{
		Etcd:              filepath.Join(dir, "etcd"),
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Scheduler:         filepath.Join(dir, "kube-scheduler"),
		Kwok:              filepath.Join(dir, "kwok"),
		Kubectl:           filepath.Join(dir, "kubectl"),
		Kubelet:           filepath.Join(dir, "kubelet"),
		KubeProxy:         filepath.Join(dir, "kube-proxy"),
		CoreDNS:           filepath.Join(dir, "coredns"),
		StagesDir:         filepath.Join(dir, "kwok-stages"),
	}
}

// DefaultBinDir is $DBPILOT_CONTROLPLANE_BIN, or bin/controlplane in the
// repository that contains the working directory.
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "controlplane"), nil
}

// RepoRoot walks up from the working directory to the directory holding the
// project's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding working directory: %w", err)
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "PROJECT")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod with a PROJECT file above the working directory")
		}
		dir = parent
	}
}

// check returns an error naming every missing binary of a cluster with a
// real node, fake nodes, or both.
func (b Binaries) check(realNode, fakeNodes bool) error {
	var missing []string
	paths := []string{b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler}
	if realNode {
		paths = append(paths, b.Kubelet, b.KubeProxy, b.CoreDNS)
	}
	if fakeNodes {
		paths = append(paths, b.Kwok, b.StagesDir)
	}
	for _, path := range paths {
		if !fileExists(path) {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries missing (run `make controlplane`): %v", missing)
	}
	return nil
}
