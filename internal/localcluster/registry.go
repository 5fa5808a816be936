package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/dbpilot/dbpilot/internal/localimages"
)

// PauseImage is the pod sandbox image containerd runs for every pod.
const PauseImage = "registry.k8s.io/pause:3.10"

// mirroredRegistries are the public registries whose names the local
// registry answers for: images keep their real names in every manifest, and
// containerd pulls them from the local registry.
var mirroredRegistries = map[string]string{
	"quay.io":         "https://quay.io",
	"docker.io":       "https://registry-1.docker.io",
	"registry.k8s.io": "https://registry.k8s.io",
}

// registry is go-containerregistry's registry, served in this process on the
// node's bridge, with blobs on disk.
type registry struct {
	addr   string
	server *http.Server
	done   chan error
}

func startRegistry(ip, blobDir string) (*registry, error) {
	if err := os.MkdirAll(blobDir, 0o755); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("starting the image registry: %w", err)
	}
	handler := ggcrregistry.New(
		ggcrregistry.Logger(log.New(io.Discard, "", 0)),
		ggcrregistry.WithBlobHandler(ggcrregistry.NewDiskBlobHandler(blobDir)),
	)
	r := &registry{
		addr:   listener.Addr().String(),
		server: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan error, 1),
	}
	go func() { r.done <- r.server.Serve(listener) }()
	return r, nil
}

// writeMirrors writes containerd's per-registry host configuration: each
// mirrored registry resolves and pulls from the local one.
func (r *registry) writeMirrors(certsDir string) error {
	for host, server := range mirroredRegistries {
		dir := filepath.Join(certsDir, host)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		hosts := fmt.Sprintf("server = %q\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", server, r.addr)
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// push stores img under its real name (quay.io/dbpilot/dbpilot:v0.1.0 is
// stored as dbpilot/dbpilot:v0.1.0, the path a mirror request asks for).
func (r *registry) push(ctx context.Context, ref string, img v1.Image) error {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	host := parsed.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	if _, ok := mirroredRegistries[host]; !ok {
		return fmt.Errorf("image %s: the local registry mirrors only %v", ref, keys(mirroredRegistries))
	}
	local := r.addr + "/" + parsed.Context().RepositoryStr() + ":" + parsed.Identifier()
	if strings.HasPrefix(parsed.Identifier(), "sha256:") {
		local = r.addr + "/" + parsed.Context().RepositoryStr() + "@" + parsed.Identifier()
	}
	target, err := name.ParseReference(local, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(target, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s to the local registry: %w", ref, err)
	}
	return nil
}

func (r *registry) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.server.Shutdown(ctx)
	if serveErr := <-r.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// pushPauseImage builds the sandbox image and stores it in the registry.
func pushPauseImage(ctx context.Context, r *registry, cacheDir string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	img, err := localimages.Pause(root, "./internal/localcluster/pause", cacheDir)
	if err != nil {
		return fmt.Errorf("building the pause image: %w", err)
	}
	return r.push(ctx, PauseImage, img)
}

// PushImage stores an image in the real node's registry under its real name
// (quay.io/..., docker.io/..., registry.k8s.io/...), where pods pull it from.
func (c *Cluster) PushImage(ctx context.Context, ref string, img v1.Image) error {
	if c.node == nil || c.node.registry == nil {
		return errors.New("the cluster has no real node: start it with Config.RealNode")
	}
	return c.node.registry.push(ctx, ref, img)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
