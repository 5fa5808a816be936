package backup

import (
	"errors"
	"os"
	"path/filepath"
)

// restoreIncomplete marks a data directory a restore is filling.
const restoreIncomplete = "dbpilot-restore-incomplete"

// StartRestore empties dir (creating it with perm when missing; a mount
// point stays) and marks it as holding half a restore, until FinishRestore:
// an engine whose start finds the mark (Restoring) restores again.
func StartRestore(dir string, perm os.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	if err := EmptyDir(dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, restoreIncomplete), nil, 0o600)
}

// FinishRestore removes the mark StartRestore left.
func FinishRestore(dir string) error {
	return os.Remove(filepath.Join(dir, restoreIncomplete))
}

// Restoring reports whether dir holds half a restore.
func Restoring(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, restoreIncomplete))
	return err == nil
}

// EmptyDir removes what dir holds, keeping dir (a mount point).
func EmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := os.RemoveAll(filepath.Join(dir, entry.Name())); err != nil {
			return err
		}
	}
	return nil
}
