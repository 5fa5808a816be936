package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// DefaultArchiveTimeout is the longest a commit waits, by default, before
// the binary log that holds it is rotated and archived.
const DefaultArchiveTimeout = 60 * time.Second

// binlogArchive is what the primary's archiving has done: the logs it
// archived (by their archived name) and how it went.
type binlogArchive struct {
	mu           sync.Mutex
	archived     map[string]bool
	lastRotation time.Time
	status       layout.ArchiveStatus
}

// ArchivedName is the name a binary log is archived under: the server's id
// first, since every server numbers its binary logs from 1.
func ArchivedName(serverID int, file string) string {
	return strconv.Itoa(serverID) + "-" + file
}

// ArchiveLogs archives a primary's closed binary logs, and rotates
// the current one (FLUSH BINARY LOGS) once it holds transactions and the
// last rotation is ArchiveTimeout old, which bounds how much a lost volume
// loses.
func (e *Engine) ArchiveLogs(ctx context.Context) error {
	if e.hasReplicaData() {
		return nil
	}
	target, err := backup.TargetFromEnv()
	if err != nil || target == nil {
		return err
	}
	store, err := backup.Open(*target)
	if err != nil {
		return err
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return err
	}
	defer db.Close()
	if replica, _, _, err := replicaState(ctx, db); err != nil || replica {
		return err
	}
	a := &e.binlogs
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.archived == nil {
		a.archived = map[string]bool{}
		a.lastRotation = time.Now()
	}
	logs, err := binaryLogs(ctx, db)
	if err != nil {
		return err
	}
	if len(logs) > 0 && logs[len(logs)-1].size > binlogHeaderSize && time.Since(a.lastRotation) >= e.archiveTimeout() {
		if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
			return fmt.Errorf("rotating the binary log: %w", err)
		}
		a.lastRotation = time.Now()
		if logs, err = binaryLogs(ctx, db); err != nil {
			return err
		}
	}
	var serverID int
	if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&serverID); err != nil {
		return err
	}
	for _, l := range logs[:max(len(logs)-1, 0)] {
		name := ArchivedName(serverID, l.name)
		if a.archived[name] {
			continue
		}
		if err := backup.PushWALAs(ctx, store, filepath.Join(e.DataDir, l.name), name); err != nil {
			now := time.Now().UTC()
			a.status.LastFailed, a.status.LastFailedTime = name, &now
			a.status.FailedCount++
			return fmt.Errorf("archiving %s: %w", l.name, err)
		}
		now := time.Now().UTC()
		a.archived[name] = true
		a.status.LastArchived, a.status.LastArchivedTime = name, &now
	}
	return nil
}

func (e *Engine) archiveTimeout() time.Duration {
	if e.ArchiveTimeout <= 0 {
		return DefaultArchiveTimeout
	}
	return e.ArchiveTimeout
}

// WALNotNeeded reports whether an archived binary log was archived before
// the backup m started: it was closed by then, so every transaction in it
// is in the backup.
func (e *Engine) WALNotNeeded(_ string, archived time.Time, m layout.BackupManifest) bool {
	return archived.Before(m.StartTime)
}

// archiveStatus is the archiving's report; nil before it first ran.
func (e *Engine) archiveStatus() *layout.ArchiveStatus {
	a := &e.binlogs
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.archived == nil {
		return nil
	}
	status := a.status
	return &status
}

// binlogHeaderSize is the size of a binary log with no transaction in it
// (its format description and GTID list events) or less.
const binlogHeaderSize = 400

type binaryLog struct {
	name string
	size int64
}

// binaryLogs lists the server's binary logs, oldest first; the last is
// the one being written.
func binaryLogs(ctx context.Context, db *sql.DB) ([]binaryLog, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("listing the binary logs: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var logs []binaryLog
	for rows.Next() {
		values := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		size, _ := strconv.ParseInt(string(values[1]), 10, 64)
		logs = append(logs, binaryLog{name: string(values[0]), size: size})
	}
	return logs, rows.Err()
}
