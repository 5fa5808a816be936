package instance

import (
	"context"
	"log/slog"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
)

// LogArchiver is an engine whose primary's logs the program archives
// (MariaDB's binary logs), where the engine does not do it itself
// (PostgreSQL's archive_command).
type LogArchiver interface {
	// ArchiveLogs archives what is new, when this instance is the
	// primary; it rotates a log that has waited long enough.
	ArchiveLogs(ctx context.Context) error
}

// logArchiveInterval is how often the logs are looked at.
const logArchiveInterval = 10 * time.Second

// archiveLogs runs the engine's archiving while ctx lasts, when the
// Database has a backup destination. Failures are logged and retried; the
// engine reports them in its status.
func archiveLogs(ctx context.Context, archiver LogArchiver, log *slog.Logger) {
	if target, err := backup.TargetFromEnv(); err != nil || target == nil {
		return
	}
	ticker := time.NewTicker(logArchiveInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			run, cancel := context.WithTimeout(ctx, 5*time.Minute)
			if err := archiver.ArchiveLogs(run); err != nil {
				log.Error("archiving the logs failed; retrying", "error", err.Error())
			}
			cancel()
		}
	}
}
