package instance

import (
	"os"
	"path/filepath"
)

// WriteFileDurably replaces a file of the data directory (mode 0600) so
// that a reader, or the engine after a crash, finds the former content or
// the new one whole: the new content is written beside it and synced,
// renamed over it, and the directory synced.
func WriteFileDurably(path string, content []byte) error {
	tmp := path + ".dbpilot"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
