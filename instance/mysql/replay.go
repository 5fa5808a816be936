package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// replayFile marks a restored datadir whose archived binary logs are still
// to be replayed, from the GTID position it holds.
const replayFile = "dbpilot-replay-binlogs"

// replayPlan is what replayFile holds.
type replayPlan struct {
	// From is the GTID position the base backup is consistent at.
	From string `json:"from"`
	// BackupStarted is when the base backup started: a binary log archived
	// before was closed before, and the backup holds all of it.
	BackupStarted time.Time `json:"backupStarted"`
}

func (e *Engine) writeReplayPlan(m layout.BackupManifest) error {
	data, err := json.Marshal(replayPlan{From: m.EndPosition, BackupStarted: m.StartTime})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.DataDir, replayFile), data, 0o600)
}

// replayBinlogs replays, once the restored server runs, the archived
// binary logs after the backup's GTID position, up to the restore's target
// time (to the second: binary log events carry whole seconds) or to the end
// of the archive, then removes the mark. Logs are replayed in the order
// they were archived; each starts after the position the server has
// reached, so what several servers archived (before and after a failover)
// is applied once. Until it is done, the instance is not ready.
func (e *Engine) replayBinlogs(ctx context.Context, db *sql.DB, creds instance.Credentials) error {
	path := filepath.Join(e.DataDir, replayFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || e.Restore == nil {
		return nil
	}
	if err != nil {
		return err
	}
	var plan replayPlan
	if err := json.Unmarshal(data, &plan); err != nil {
		return fmt.Errorf("%s: %w", replayFile, err)
	}
	store, err := backup.Open(e.Restore.Target)
	if err != nil {
		return err
	}
	files, err := archivedInOrder(ctx, store, plan.BackupStarted)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "binlogs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	position := plan.From
	for _, name := range files {
		local := filepath.Join(tmp, name)
		if err := backup.FetchWAL(ctx, store, name, local); err != nil {
			return fmt.Errorf("restoring backup %q: fetching binary log %s: %w", e.Restore.Backup, name, err)
		}
		if err := e.replayOne(ctx, local, position, e.Restore.TargetTime, creds); err != nil {
			return fmt.Errorf("restoring backup %q: replaying binary log %s: %w", e.Restore.Backup, name, err)
		}
		_ = os.Remove(local)
		var reached string
		if err := db.QueryRowContext(ctx, e.reachedQuery()).Scan(&reached); err != nil {
			return err
		}
		if reached != "" {
			position = reached
		}
	}
	return os.Remove(path)
}

// archivedInOrder lists the binary logs archived since the backup started,
// in the order they were archived.
func archivedInOrder(ctx context.Context, store objectstore.Store, since time.Time) ([]string, error) {
	all, err := backup.ArchivedWALFiles(ctx, store)
	if err != nil {
		return nil, err
	}
	var files []objectstore.Object
	for _, f := range all {
		if !f.Modified.Before(since) {
			files = append(files, f)
		}
	}
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].Modified.Equal(files[j].Modified) {
			return files[i].Modified.Before(files[j].Modified)
		}
		return files[i].Key < files[j].Key
	})
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Key
	}
	return names, nil
}

// reachedQuery reads the GTID position the server has reached.
func (e *Engine) reachedQuery() string {
	if e.Flavor == MySQL {
		return "SELECT @@global.gtid_executed"
	}
	return "SELECT @@gtid_binlog_pos"
}

// replayOne pipes the binary log decoder's events after position (and
// before stop, when set) into the server: MariaDB's client logs in as the
// OS user over the socket, MySQL's as root with the superuser password,
// given in its environment.
func (e *Engine) replayOne(ctx context.Context, file, position string, stop *time.Time, creds instance.Credentials) error {
	decoder, client := "mariadb-binlog", "mariadb"
	user, err := currentUser()
	if err != nil {
		return err
	}
	var clientEnv []string
	if e.Flavor == MySQL {
		decoder, client, user = "mysqlbinlog", "mysql", "root"
		clientEnv = []string{"MYSQL_PWD=" + creds.SuperuserPassword}
	}
	decode := exec.CommandContext(ctx, decoder, ReplayArgs(e.Flavor, file, position, stop)...)
	// --stop-datetime is read in the local time zone.
	decode.Env = append(os.Environ(), "TZ=UTC")
	apply := exec.CommandContext(ctx, client, append(e.defaultsArgs(), "--socket="+e.Socket, "--user="+user, "--binary-mode")...)
	apply.Env = append(os.Environ(), clientEnv...)
	pipe, err := decode.StdoutPipe()
	if err != nil {
		return err
	}
	apply.Stdin = pipe
	var decodeErr, applyOut bytes.Buffer
	decode.Stderr = &decodeErr
	apply.Stdout, apply.Stderr = &applyOut, &applyOut
	if err := decode.Start(); err != nil {
		return err
	}
	if err := apply.Start(); err != nil {
		_ = decode.Process.Kill()
		_ = decode.Wait()
		return err
	}
	applyErr := apply.Wait()
	if applyErr != nil {
		_ = decode.Process.Kill()
	}
	_, _ = io.Copy(io.Discard, pipe)
	decodeWait := decode.Wait()
	switch {
	case decodeWait != nil && strings.Contains(decodeErr.String(), "never reached expected GTID state"):
		// Every event of this log is at or before the position: the
		// server has them all already.
		return nil
	case applyErr != nil:
		return fmt.Errorf("mariadb: %v: %s", applyErr, lastLines(applyOut.String(), 5))
	case decodeWait != nil:
		return fmt.Errorf("mariadb-binlog: %v: %s", decodeWait, lastLines(decodeErr.String(), 5))
	}
	return nil
}

// ReplayArgs are the decoder's arguments (mariadb-binlog, MySQL's
// mysqlbinlog) to decode file's events after the GTID position (all of them
// when it is empty) and before stop. MySQL's position is a GTID set, whose
// transactions are skipped.
func ReplayArgs(flavor Flavor, file, position string, stop *time.Time) []string {
	var args []string
	switch {
	case position == "":
	case flavor == MySQL:
		args = append(args, "--exclude-gtids="+position)
	default:
		args = append(args, "--start-position="+position)
	}
	if stop != nil {
		args = append(args, "--stop-datetime="+stop.UTC().Format("2006-01-02 15:04:05"))
	}
	return append(args, file)
}
