package mysql

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// mysqlBaseArtifact is a MySQL base backup's one artifact: a tar of the
// datadir the CLONE plugin copied locally.
const mysqlBaseArtifact = "base.tar.gz"

// MySQLBackupStatements copy the running MySQL server into dir (which must
// not exist) with the CLONE plugin, a consistent datadir, and read the GTID
// set it holds. This path is unit-tested only; it has not run against a
// real MySQL server.
func MySQLBackupStatements(dir string) []Statement {
	return []Statement{{"cloning the server into a local directory", "CLONE LOCAL DATA DIRECTORY = " + quoteString(dir)}}
}

// mysqlCloneGTIDQuery reads the GTID set of the newest clone.
const mysqlCloneGTIDQuery = "SELECT GTID_EXECUTED FROM performance_schema.clone_status ORDER BY ID DESC LIMIT 1"

// backupMySQL takes a MySQL base backup: a local clone, streamed as a tar
// into the store, the GTID set it holds as its position.
func (e *Engine) backupMySQL(ctx context.Context, store objectstore.Store, m layout.BackupManifest) (layout.BackupManifest, error) {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return m, err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT @@version").Scan(&m.Version); err != nil {
		return m, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(e.DataDir), ".backup-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "clone")
	for _, s := range MySQLBackupStatements(dir) {
		if _, err := db.ExecContext(ctx, s.SQL); err != nil {
			return m, fmt.Errorf("%s: %w", s.What, err)
		}
	}
	if err := db.QueryRowContext(ctx, mysqlCloneGTIDQuery).Scan(&m.StartPosition); err != nil {
		return m, fmt.Errorf("reading the clone's GTID set: %w", err)
	}
	m.EndPosition = m.StartPosition
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(backup.WriteTar(pw, dir)) }()
	file, err := backup.Upload(ctx, store, backup.ArtifactKey(m.Name, mysqlBaseArtifact), pr)
	if err != nil {
		return m, err
	}
	m.EndTime = time.Now().UTC()
	m.Files = []layout.ArtifactFile{file}
	return m, backup.WriteManifest(ctx, store, m)
}

// restoreMySQL unpacks a MySQL base backup, a ready datadir, into the
// empty datadir.
func (e *Engine) restoreMySQL(ctx context.Context, store objectstore.Store, m layout.BackupManifest) error {
	return backup.ExtractTar(func(w io.Writer) error { return backup.Download(ctx, store, m.Files[0], w) }, e.DataDir)
}
