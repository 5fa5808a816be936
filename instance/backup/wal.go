package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// walPrefix holds the archived WAL segments (PostgreSQL) or binlogs
// (MariaDB): NAME.gz, and NAME.gz.json with its ArtifactFile, written after
// it, so a segment counts as archived only once both exist.
const walPrefix = "wal/"

// WALKey is the object key of an archived WAL segment or binlog.
func WALKey(name string) string { return walPrefix + name + ".gz" }

// PushWAL archives the file at filePath under its base name. A segment
// archived before with the same content is accepted (PostgreSQL retries a
// segment whose archiving it did not see finish); one with different
// content is refused: another database archives to the same place.
func PushWAL(ctx context.Context, store objectstore.Store, filePath string) error {
	return PushWALAs(ctx, store, filePath, filepath.Base(filePath))
}

// PushWALAs is PushWAL under another name than the file's.
func PushWALAs(ctx context.Context, store objectstore.Store, filePath, name string) error {
	f, err := os.Open(filePath)
	if err != nil {
		return err
	}
	defer f.Close()
	if existing, err := readArtifact(ctx, store, WALKey(name)); err == nil {
		same, err := sameContent(ctx, store, existing, f)
		if err != nil {
			return err
		}
		if same {
			return nil
		}
		return fmt.Errorf("%s is already archived with different content: another database archives to this destination", name)
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	file, err := Upload(ctx, store, WALKey(name), f)
	if err != nil {
		return err
	}
	return writeArtifact(ctx, store, file)
}

// FetchWAL restores the archived file name into dest: written to a
// temporary file and renamed once its checksum is verified.
// objectstore.ErrNotFound says it was never archived.
func FetchWAL(ctx context.Context, store objectstore.Store, name, dest string) error {
	file, err := readArtifact(ctx, store, WALKey(name))
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".fetch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := Download(ctx, store, file, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}

// ArchivedWAL lists the names of the archived segments (or binlogs) that
// are complete, sorted.
func ArchivedWAL(ctx context.Context, store objectstore.Store) ([]string, error) {
	files, err := ArchivedWALFiles(ctx, store)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Key
	}
	return names, err
}

// ArchivedWALFiles lists the complete archived segments (or binlogs), sorted
// by name: each Object's Key is the file's name, Modified when its
// archiving completed.
func ArchivedWALFiles(ctx context.Context, store objectstore.Store) ([]objectstore.Object, error) {
	objects, err := store.List(ctx, walPrefix)
	if err != nil {
		return nil, err
	}
	var files []objectstore.Object
	for _, o := range objects {
		if base, ok := strings.CutSuffix(o.Key, ".gz.json"); ok {
			files = append(files, objectstore.Object{Key: path.Base(base), Modified: o.Modified})
		}
	}
	return files, nil
}

// DeleteWAL removes an archived segment: its record first, so a segment is
// never listed without its data.
func DeleteWAL(ctx context.Context, store objectstore.Store, name string) error {
	if err := store.Delete(ctx, WALKey(name)+".json"); err != nil {
		return err
	}
	return store.Delete(ctx, WALKey(name))
}

func sameContent(ctx context.Context, store objectstore.Store, file layout.ArtifactFile, local io.Reader) (bool, error) {
	var archived bytes.Buffer
	if err := Download(ctx, store, file, &archived); err != nil {
		return false, err
	}
	mine, err := io.ReadAll(local)
	if err != nil {
		return false, err
	}
	return bytes.Equal(archived.Bytes(), mine), nil
}

func writeArtifact(ctx context.Context, store objectstore.Store, file layout.ArtifactFile) error {
	data, err := json.Marshal(file)
	if err != nil {
		return err
	}
	return store.Put(ctx, file.Key+".json", bytes.NewReader(data))
}

func readArtifact(ctx context.Context, store objectstore.Store, key string) (layout.ArtifactFile, error) {
	var file layout.ArtifactFile
	err := readJSON(ctx, store, key+".json", &file)
	return file, err
}

func readJSON(ctx context.Context, store objectstore.Store, key string, v any) error {
	r, err := store.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}
