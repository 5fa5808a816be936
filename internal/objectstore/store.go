// Package objectstore is where backups live: an S3-compatible bucket or a
// directory on a mounted volume, behind one small interface, so the backup
// code does not care which.
package objectstore

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned by Get and Stat for a key that does not exist.
var ErrNotFound = errors.New("object not found")

// Object describes one stored object.
type Object struct {
	// Key is the object's key, relative to the store's prefix.
	Key string
	// Size is its length in bytes.
	Size int64
	// Modified is when it was written.
	Modified time.Time
}

// Store holds objects by key ("base/NAME/manifest.json"). Keys use "/" as
// their separator whatever the backend.
type Store interface {
	// Put writes the object at key from r, replacing any older one; a
	// reader cut short leaves no object behind.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object at key; the caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the object at key.
	Stat(ctx context.Context, key string) (Object, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the object at key; a missing object is not an error.
	Delete(ctx context.Context, key string) error
}
