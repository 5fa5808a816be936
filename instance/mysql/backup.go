package mysql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// baseArtifact is a MariaDB base backup's one artifact: mariadb-backup's
// mbstream of the running server.
const baseArtifact = "base.mbstream.gz"

// Backup takes a physical backup of this instance with mariadb-backup
// (from a replica, the primary is not loaded), streamed compressed into the
// store, and writes its manifest last: the GTID position the backup is
// consistent at is its start and end.
func (e *Engine) Backup(ctx context.Context, store objectstore.Store, name, instanceName string) (layout.BackupManifest, error) {
	m := layout.BackupManifest{Name: name, Engine: string(e.Flavor), Instance: instanceName, StartTime: time.Now().UTC()}
	if e.Flavor == MySQL {
		return e.backupMySQL(ctx, store, m)
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return m, err
	}
	err = db.QueryRowContext(ctx, "SELECT @@version").Scan(&m.Version)
	db.Close()
	if err != nil {
		return m, fmt.Errorf("reading the server's version: %w", err)
	}
	osUser, err := currentUser()
	if err != nil {
		return m, err
	}
	tmp, err := os.MkdirTemp("", "backup-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "mariadb-backup", append(e.defaultsArgs(), "--backup", "--stream=mbstream",
		"--target-dir="+tmp, "--datadir="+e.DataDir, "--socket="+e.Socket, "--user="+osUser)...)
	file, log, err := backup.UploadOutput(ctx, store, backup.ArtifactKey(name, baseArtifact), cmd)
	if err != nil {
		return m, err
	}
	m.EndTime = time.Now().UTC()
	m.Files = []layout.ArtifactFile{file}
	m.StartPosition = BackupLogGTID(log)
	m.EndPosition = m.StartPosition
	return m, backup.WriteManifest(ctx, store, m)
}

var backupGTIDPattern = regexp.MustCompile(`GTID of the last change '([^']*)'`)

// BackupLogGTID is the GTID position mariadb-backup reports the backup
// consistent at; "" for a server that has written nothing.
func BackupLogGTID(log string) string {
	if m := backupGTIDPattern.FindStringSubmatch(log); m != nil {
		return m[1]
	}
	return ""
}

// restore fills the empty datadir from a base backup: unpacked with
// mbstream and prepared. What made the source a replica is removed, so the
// restored server starts as a primary of its own. A backup that cannot be
// used (missing, of another engine or major version, a checksum mismatch)
// is an error that names why, and leaves the datadir empty.
func (e *Engine) restore(ctx context.Context) error {
	src := e.Restore
	store, m, err := backup.OpenBackup(ctx, *src)
	if err != nil {
		return err
	}
	if err := e.checkRestorable(ctx, m); err != nil {
		return err
	}
	if err := backup.StartRestore(e.DataDir, 0o750); err != nil {
		return err
	}
	fail := func(err error) error {
		_ = e.Discard()
		return fmt.Errorf("restoring backup %q: %w", src.Backup, err)
	}
	if e.Flavor == MySQL {
		if err := e.restoreMySQL(ctx, store, m); err != nil {
			return fail(err)
		}
	} else if err := e.unpackMariaDB(ctx, store, m); err != nil {
		return fail(err)
	}
	for _, name := range []string{masterInfoFile, "relay-log.info", cloneGTIDFile, rejoinFile} {
		if err := os.Remove(filepath.Join(e.DataDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	// The archived binary logs after the backup are replayed once the
	// server runs (replayBinlogs).
	if err := e.writeReplayPlan(m); err != nil {
		return fail(err)
	}
	return backup.FinishRestore(e.DataDir)
}

// unpackMariaDB unpacks a MariaDB base backup with mbstream and prepares
// it.
func (e *Engine) unpackMariaDB(ctx context.Context, store objectstore.Store, m layout.BackupManifest) error {
	unpack := exec.CommandContext(ctx, "mbstream", "-x", "-C", e.DataDir)
	pr, pw := io.Pipe()
	unpack.Stdin = pr
	var unpackOut bytes.Buffer
	unpack.Stdout, unpack.Stderr = &unpackOut, &unpackOut
	if err := unpack.Start(); err != nil {
		return err
	}
	downloaded := make(chan error, 1)
	go func() {
		err := backup.Download(ctx, store, m.Files[0], pw)
		pw.CloseWithError(err)
		downloaded <- err
	}()
	unpackErr := unpack.Wait()
	// mbstream may stop reading early (corrupt input): the download still
	// reads the whole object, so a checksum mismatch is what is reported.
	pr.CloseWithError(errors.New("mbstream exited"))
	downloadErr := <-downloaded
	switch {
	case errors.Is(downloadErr, backup.ErrChecksum):
		return downloadErr
	case unpackErr == nil && downloadErr != nil:
		return downloadErr
	case unpackErr != nil:
		return fmt.Errorf("mbstream: %v: %s", unpackErr, lastLines(unpackOut.String(), 5))
	}
	prepare := exec.CommandContext(ctx, "mariadb-backup", append(e.defaultsArgs(), "--prepare", "--target-dir="+e.DataDir)...)
	if out, err := prepare.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-backup --prepare: %v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

// checkRestorable refuses a backup of another engine or major version.
func (e *Engine) checkRestorable(ctx context.Context, m layout.BackupManifest) error {
	if m.Engine != string(e.Flavor) {
		return fmt.Errorf("backup %q is of %s, not %s", m.Name, m.Engine, e.Flavor)
	}
	server := "mariadbd"
	if e.Flavor == MySQL {
		server = "mysqld"
	}
	out, err := exec.CommandContext(ctx, server, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", server, err)
	}
	local := releaseSeries(string(out))
	if local == "" || local != releaseSeries(m.Version) {
		return fmt.Errorf("backup %q is of %s %s; this server is %s: a backup restores only into its release series",
			m.Name, e.Flavor, m.Version, strings.TrimSpace(string(out)))
	}
	return nil
}

var seriesPattern = regexp.MustCompile(`(\d+)\.(\d+)\.\d+`)

// releaseSeries is "10.11" of "10.11.14-MariaDB-0+deb12u2" or of
// "mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 for debian-linux-gnu".
func releaseSeries(s string) string {
	if m := seriesPattern.FindStringSubmatch(s); m != nil {
		return m[1] + "." + m[2]
	}
	return ""
}
