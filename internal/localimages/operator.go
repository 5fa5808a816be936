package localimages

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OperatorImage is the operator's image name, as the bundle's CSV and
// config/manager use it.
const OperatorImage = "quay.io/dbpilot/dbpilot:v0.1.0"

// Programs in the operator image, at the paths the Dockerfile puts them.
const (
	ManagerPath  = "/manager"
	InstancePath = "/instance"
)

// GoBinary builds a static binary of the main package pkg (relative to
// repoRoot) into dir, as the Dockerfile does. The Makefile compiles
// everything in this configuration (no cgo, trimmed paths), so under make
// the binaries reuse the packages the tests compiled.
func GoBinary(repoRoot, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	if pkg == "./cmd" {
		out = filepath.Join(dir, "manager")
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v: %s", pkg, err, output)
	}
	return out, nil
}

// Operator is the operator's image: the manager and the instance program,
// static binaries built from the repository, run as a non-root user.
func Operator(repoRoot, cacheDir string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "dbpilot-operator-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	manager, err := GoBinary(repoRoot, "./cmd", dir)
	if err != nil {
		return nil, err
	}
	instance, err := GoBinary(repoRoot, "./cmd/instance", dir)
	if err != nil {
		return nil, err
	}
	return Build(Spec{
		Entries: append(debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin"),
			Entry{Path: ManagerPath[1:], Source: manager, Mode: 0o755},
			Entry{Path: InstancePath[1:], Source: instance, Mode: 0o755},
		),
		Entrypoint: []string{ManagerPath},
		User:       "65532:65532",
	}, cacheDir)
}

// Pause is the pod sandbox image: a static program that sleeps until it is
// told to stop and reaps orphans, built from pauseDir's main package.
func Pause(repoRoot, pkg, cacheDir string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "dbpilot-pause-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := GoBinary(repoRoot, pkg, dir)
	if err != nil {
		return nil, err
	}
	return Build(Spec{
		Entries:    []Entry{{Path: "pause", Source: bin, Mode: 0o755}},
		Entrypoint: []string{"/pause"},
		User:       "65535:65535",
	}, cacheDir)
}
