package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is a Store in a directory: a volume mounted into the pod. Objects are
// written to a temporary file and renamed, so a reader never sees half of
// one.
type Dir struct {
	// Root is the directory; it is created when missing.
	Root string
}

var _ Store = Dir{}

func (d Dir) path(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if clean == "/" || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("object key %q is not a file name", key)
	}
	return filepath.Join(d.Root, clean), nil
}

// Put writes the object through a temporary file in the same directory.
func (d Dir) Put(ctx context.Context, key string, r io.Reader) error {
	path, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, contextReader{ctx, r}); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Get opens the object's file.
func (d Dir) Get(_ context.Context, key string) (io.ReadCloser, error) {
	path, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return f, err
}

// Stat describes the object's file.
func (d Dir) Stat(_ context.Context, key string) (Object, error) {
	path, err := d.path(key)
	if err != nil {
		return Object{}, err
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Object{}, err
	}
	return Object{Key: key, Size: info.Size(), Modified: info.ModTime()}, nil
}

// List walks the directory; temporary files of writes in progress are
// skipped.
func (d Dir) List(_ context.Context, prefix string) ([]Object, error) {
	var objects []Object
	err := filepath.WalkDir(d.Root, func(path string, entry fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if entry.IsDir() || strings.HasPrefix(entry.Name(), ".put-") {
			return nil
		}
		rel, err := filepath.Rel(d.Root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		objects = append(objects, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	sort.Slice(objects, func(i, j int) bool { return objects[i].Key < objects[j].Key })
	return objects, err
}

// Delete removes the object's file.
func (d Dir) Delete(_ context.Context, key string) error {
	path, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// contextReader stops a copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
