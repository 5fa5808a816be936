package backup

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// UploadOutput runs cmd (a backup tool writing its backup to stdout) and
// uploads what it writes to key, compressed and checksummed. It returns the
// artifact and the tool's stderr (where the tools report positions); a
// tool that fails, or an upload that fails (the tool is killed then), is an
// error.
func UploadOutput(ctx context.Context, store objectstore.Store, key string, cmd *exec.Cmd) (layout.ArtifactFile, string, error) {
	tool := filepath.Base(cmd.Path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return layout.ArtifactFile{}, "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return layout.ArtifactFile{}, "", fmt.Errorf("%s: %w", tool, err)
	}
	file, uploadErr := Upload(ctx, store, key, stdout)
	if uploadErr != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case uploadErr != nil:
		return file, stderr.String(), uploadErr
	case waitErr != nil:
		return file, stderr.String(), fmt.Errorf("%s: %v: %s", tool, waitErr, lastLines(stderr.String(), 5))
	}
	return file, stderr.String(), nil
}

// OpenBackup opens the restore source's store and reads the manifest of
// its backup; a missing backup is an error that names it.
func OpenBackup(ctx context.Context, src layout.RestoreSource) (objectstore.Store, layout.BackupManifest, error) {
	store, err := Open(src.Target)
	if err != nil {
		return nil, layout.BackupManifest{}, err
	}
	m, err := ReadManifest(ctx, store, src.Backup)
	if err != nil {
		return nil, m, fmt.Errorf("restoring backup %q: %w", src.Backup, err)
	}
	if len(m.Files) != 1 {
		return nil, m, fmt.Errorf("restoring backup %q: its manifest lists %d artifacts, want 1", src.Backup, len(m.Files))
	}
	return store, m, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
