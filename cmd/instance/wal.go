package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// walTimeout bounds one segment's upload or download; PostgreSQL retries a
// failed archive_command, and a failed restore_command fails the restore.
const walTimeout = 5 * time.Minute

// walPush is archive_command: `instance wal-push PATH` uploads the segment
// to the backup destination in layout.BackupTargetEnv. A failure makes
// PostgreSQL keep the segment and try again; pg_stat_archiver counts it.
func walPush(args []string) error {
	if len(args) != 1 {
		return errors.New("wal-push takes one argument, the segment's path")
	}
	target, err := backup.TargetFromEnv()
	if err != nil {
		return err
	}
	if target == nil {
		return fmt.Errorf("%s is not set: no backup destination", layout.BackupTargetEnv)
	}
	store, err := backup.Open(*target)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), walTimeout)
	defer cancel()
	return backup.PushWAL(ctx, store, args[0])
}

// Exit codes of walFetch: PostgreSQL reads exit code 1 as "not archived"
// (the end of the archive: recovery ends there), and a code above 125 as a
// failure that must stop recovery, so an unreachable store or a corrupted
// segment never ends a restore early, silently losing what follows.
const (
	walNotArchived = 1
	walFetchFailed = 200
)

// walFetch is restore_command: `instance wal-fetch NAME DEST` downloads an
// archived file from the restore source in layout.RestoreSourceEnv.
func walFetch(args []string, log *slog.Logger) int {
	fail := func(err error) int {
		log.Error("wal-fetch failed: the restore stops", "error", err.Error())
		return walFetchFailed
	}
	if len(args) != 2 {
		return fail(errors.New("wal-fetch takes two arguments, the file's name and its destination"))
	}
	src, err := backup.RestoreSourceFromEnv()
	if err != nil {
		return fail(err)
	}
	if src == nil {
		return fail(fmt.Errorf("%s is not set: nothing to restore from", layout.RestoreSourceEnv))
	}
	store, err := backup.Open(src.Target)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), walTimeout)
	defer cancel()
	err = backup.FetchWAL(ctx, store, args[0], args[1])
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return walNotArchived
	case err != nil:
		return fail(err)
	}
	return 0
}
