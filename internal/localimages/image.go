// Package localimages writes container images from files on this machine,
// without a container engine: the operator's image from binaries built from
// the repository, the engine images from the machine's Debian packages, and
// the small images the local cluster needs. Images are single-layer OCI
// images built with go-containerregistry and cached by content.
package localimages

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file, directory or symlink of an image's root filesystem.
type Entry struct {
	// Path inside the image, without a leading slash.
	Path string
	// Source is a file on this machine whose content the entry takes; empty
	// for directories, symlinks and entries with Content.
	Source string
	// Content is the entry's content when Source is empty.
	Content []byte
	// Link makes the entry a symlink to Link.
	Link string
	// Dir makes the entry a directory.
	Dir bool
	// Mode is the permission bits; 0 means 0755 for directories and
	// executables' sources, the source's mode otherwise.
	Mode fs.FileMode
}

// Spec describes an image: its root filesystem and how it runs.
type Spec struct {
	// Entries are the root filesystem; parents are added as needed.
	Entries []Entry
	// Entrypoint, Cmd, Env, User and WorkingDir go into the image
	// configuration.
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
}

// epoch is every entry's time, so an image depends on content only.
var epoch = time.Unix(0, 0).UTC()

// Build writes the image Spec describes, or loads it from cacheDir when an
// image of the same content was built before. cacheDir may be empty (no
// cache).
func Build(spec Spec, cacheDir string) (v1.Image, error) {
	key, err := spec.contentKey()
	if err != nil {
		return nil, err
	}
	cached := filepath.Join(cacheDir, key)
	if cacheDir != "" {
		if img, err := loadCached(cached); err == nil {
			return img, nil
		}
	}
	layerTar, err := spec.layer()
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(layerTar, types.OCIUncompressedLayer))
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Cmd = spec.Cmd
	cfg.Config.Env = spec.Env
	cfg.Config.User = spec.User
	cfg.Config.WorkingDir = spec.WorkingDir
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	if cacheDir != "" {
		if err := storeCached(cached, img); err != nil {
			return nil, err
		}
	}
	return img, nil
}

func loadCached(dir string) (v1.Image, error) {
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil || len(manifest.Manifests) != 1 {
		return nil, fmt.Errorf("cached image %s is incomplete", dir)
	}
	return index.Image(manifest.Manifests[0].Digest)
}

func storeCached(dir string, img v1.Image) error {
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	path, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("writing image cache: %w", err)
	}
	if err := path.AppendImage(img); err != nil {
		return fmt.Errorf("writing image cache: %w", err)
	}
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

// contentKey hashes everything the image depends on: the spec, and each
// source file's content.
func (s Spec) contentKey() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q\n", s.Entrypoint, s.Cmd, s.Env, s.User, s.WorkingDir)
	for _, e := range s.sorted() {
		fmt.Fprintf(h, "%s %s %o %t %d\n", e.Path, e.Link, e.Mode, e.Dir, len(e.Content))
		h.Write(e.Content)
		if e.Source != "" {
			f, err := os.Open(e.Source)
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", e.Source, err)
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", e.Source, err)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// sorted returns the entries with their missing parent directories, in
// path order, the last entry for a path winning.
func (s Spec) sorted() []Entry {
	byPath := map[string]Entry{}
	for _, e := range s.Entries {
		e.Path = filepath.Clean(e.Path)
		byPath[e.Path] = e
		for dir := filepath.Dir(e.Path); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = Entry{Path: dir, Dir: true}
			}
		}
	}
	entries := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries
}

// layer writes the root filesystem as an uncompressed tar.
func (s Spec) layer() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range s.sorted() {
		hdr := &tar.Header{Name: e.Path, ModTime: epoch, Format: tar.FormatPAX}
		var body io.Reader
		switch {
		case e.Dir:
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, e.Path+"/", int64(modeOr(e.Mode, 0o755))
		case e.Link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, e.Link, 0o777
		case e.Source != "":
			info, err := os.Stat(e.Source)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", e.Source, err)
			}
			data, err := os.ReadFile(e.Source)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", e.Source, err)
			}
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, int64(len(data)), int64(modeOr(e.Mode, info.Mode().Perm()))
			body = bytes.NewReader(data)
		default:
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, int64(len(e.Content)), int64(modeOr(e.Mode, 0o644))
			body = bytes.NewReader(e.Content)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func modeOr(mode, fallback fs.FileMode) fs.FileMode {
	if mode == 0 {
		return fallback
	}
	return mode
}
