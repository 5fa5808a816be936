package localimages

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Images OLM runs, and the project's bundle and catalog, under their real
// names.
const (
	OLMImage     = "quay.io/operator-framework/olm:v0.38.0"
	OPMImage     = "quay.io/operator-framework/opm:v1.69.0"
	BundleImage  = "quay.io/dbpilot/dbpilot-bundle:v0.1.0"
	CatalogImage = "quay.io/dbpilot/dbpilot-catalog:v0.1.0"
)

// OLMTools are the binaries the OLM images hold.
type OLMTools struct {
	// OLM, Catalog, CopyContent and CPB are OLM's programs.
	OLM, Catalog, CopyContent, CPB string
	// OPM serves catalogs and extracts bundles.
	OPM string
	// GRPCHealthProbe is the registry pods' probe.
	GRPCHealthProbe string
}

// withCopy is a base with the host's cp, which OLM's bundle unpack job runs
// from the util image.
func withCopy() ([]Entry, error) {
	libs, err := sharedLibraries("/usr/bin/cp")
	if err != nil {
		return nil, err
	}
	entries := debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin")
	entries = append(entries, hostFiles("/usr/bin/cp")...)
	return append(entries, libs...), nil
}

// OLM is OLM's operator image: olm, catalog, copy-content and cpb in /bin.
func OLM(tools OLMTools, cacheDir string) (v1.Image, error) {
	entries, err := withCopy()
	if err != nil {
		return nil, err
	}
	for name, src := range map[string]string{"olm": tools.OLM, "catalog": tools.Catalog, "copy-content": tools.CopyContent, "cpb": tools.CPB} {
		entries = append(entries, Entry{Path: "usr/bin/" + name, Source: src, Mode: 0o755})
	}
	return Build(Spec{Entries: entries, Entrypoint: []string{"/bin/olm"}, User: "65532:65532",
		Env: []string{"PATH=/usr/bin:/bin"}}, cacheDir)
}

// OPM is operator-registry's image: opm and grpc_health_probe in /bin.
func OPM(tools OLMTools, cacheDir string) (v1.Image, error) {
	entries := append(debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin"),
		Entry{Path: "usr/bin/opm", Source: tools.OPM, Mode: 0o755},
		Entry{Path: "usr/bin/grpc_health_probe", Source: tools.GRPCHealthProbe, Mode: 0o755})
	return Build(Spec{Entries: entries, Entrypoint: []string{"/bin/opm"}, User: "65532:65532",
		Env: []string{"PATH=/usr/bin:/bin"}}, cacheDir)
}

// Bundle is the bundle image bundle.Dockerfile describes: the manifests,
// metadata and scorecard tests of bundleDir, no program.
func Bundle(bundleDir, cacheDir string) (v1.Image, error) {
	var entries []Entry
	for _, sub := range []string{"manifests", "metadata", "tests/scorecard"} {
		tree, err := treeAt(filepath.Join(bundleDir, sub), sub, false)
		if err != nil {
			return nil, err
		}
		entries = append(entries, tree...)
	}
	return Build(Spec{Entries: entries}, cacheDir)
}

// Catalog is the catalog image catalog.Dockerfile describes: opm serving
// catalogDir from /configs, with its cache built in (opm serve
// --cache-only, run here as the Dockerfile's RUN step does).
func Catalog(tools OLMTools, catalogDir, cacheDir string) (v1.Image, error) {
	work, err := os.MkdirTemp("", "dbpilot-catalog-cache-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	cache := filepath.Join(work, "cache")
	out, err := exec.Command(tools.OPM, "serve", catalogDir, "--cache-dir="+cache, "--cache-only").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("building the catalog's cache: %v: %s", err, out)
	}
	configs, err := treeAt(catalogDir, "configs", false)
	if err != nil {
		return nil, err
	}
	// opm takes a lock file in its cache: whoever the registry pod runs as
	// must be able to write there.
	cached, err := treeAt(cache, "tmp/cache", true)
	if err != nil {
		return nil, err
	}
	entries := append(debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin"),
		Entry{Path: "usr/bin/opm", Source: tools.OPM, Mode: 0o755},
		Entry{Path: "usr/bin/grpc_health_probe", Source: tools.GRPCHealthProbe, Mode: 0o755})
	entries = append(entries, configs...)
	entries = append(entries, cached...)
	return Build(Spec{Entries: entries, Entrypoint: []string{"/bin/opm"}, Cmd: []string{"serve", "/configs", "--cache-dir=/tmp/cache"},
		User: "65532:65532", Env: []string{"PATH=/usr/bin:/bin"}}, cacheDir)
}

// treeAt copies the tree under src to dst in the image, readable by all,
// and writable by all when writable is set.
func treeAt(src, dst string, writable bool) ([]Entry, error) {
	dirMode, fileMode := fs.FileMode(0o755), fs.FileMode(0o644)
	if writable {
		dirMode, fileMode = 0o777, 0o666
	}
	var entries []Entry
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := strings.TrimSuffix(filepath.Join(dst, rel), "/.")
		switch {
		case d.IsDir():
			entries = append(entries, Entry{Path: target, Dir: true, Mode: dirMode})
		case d.Type().IsRegular():
			entries = append(entries, Entry{Path: target, Source: path, Mode: fileMode})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copying %s: %w", src, err)
	}
	return entries, nil
}

// Images operator-sdk's scorecard runs: the test program and a tools image
// for its untar init container and storage sidecar.
const (
	ScorecardTestImage  = "quay.io/operator-framework/scorecard-test:v1.33.0"
	ScorecardToolsImage = "quay.io/dbpilot/scorecard-tools:local"
)

// ScorecardTest is operator-sdk's scorecard-test program on PATH.
func ScorecardTest(binary, cacheDir string) (v1.Image, error) {
	entries := append(debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin"),
		Entry{Path: "usr/local/bin/scorecard-test", Source: binary, Mode: 0o755})
	return Build(Spec{Entries: entries, User: "65532:65532",
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}, cacheDir)
}

// ScorecardTools holds sh, tar, gzip and sleep: scorecard untars the bundle
// with `tar xvzf` in an init container and keeps a storage sidecar asleep.
func ScorecardTools(cacheDir string) (v1.Image, error) {
	tools := []string{"/usr/bin/dash", "/usr/bin/tar", "/usr/bin/gzip", "/usr/bin/sleep"}
	libs, err := sharedLibraries(tools...)
	if err != nil {
		return nil, err
	}
	entries := debianBase("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin")
	entries = append(entries, hostFiles(tools...)...)
	entries = append(entries, libs...)
	entries = append(entries, Entry{Path: "usr/bin/sh", Link: "dash"})
	return Build(Spec{Entries: entries, Env: []string{"PATH=/usr/bin:/bin"}}, cacheDir)
}
