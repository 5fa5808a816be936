package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

const recoverySignal = "recovery.signal"

// restore fills the empty data directory from a base backup and leaves it
// to recover: recovery.signal, and the settings RestoreArgs gives the
// server, fetch the archived WAL up to the target and then promote. A
// backup that cannot be used (missing, another engine or major version, a
// checksum mismatch) is an error that names why, and leaves PGDATA empty.
func (e *Engine) restore(ctx context.Context) error {
	src := e.Restore
	store, m, err := backup.OpenBackup(ctx, *src)
	if err != nil {
		return err
	}
	if err := e.checkRestorable(ctx, m); err != nil {
		return err
	}
	// The directory holds half a restore until the recovery settings are
	// written: a restart empties it and starts over.
	if err := backup.StartRestore(e.DataDir, 0o700); err != nil {
		return err
	}
	if err := e.extract(ctx, func(w io.Writer) error { return backup.Download(ctx, store, m.Files[0], w) }); err != nil {
		_ = backup.EmptyDir(e.DataDir)
		return fmt.Errorf("restoring backup %q: %w", src.Backup, err)
	}
	// The backup may come from a replica: its standby settings and signal
	// go, and the lock file of the server it was taken from.
	for _, name := range []string{standbySignal, "postmaster.pid", "postmaster.opts"} {
		if err := os.Remove(filepath.Join(e.DataDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	autoConf := filepath.Join(e.DataDir, "postgresql.auto.conf")
	existing, err := os.ReadFile(autoConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(autoConf, []byte(withoutSettings(string(existing), standbySettings)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.DataDir, recoverySignal), nil, 0o600); err != nil {
		return err
	}
	return backup.FinishRestore(e.DataDir)
}

// checkRestorable refuses a backup of another engine or major version.
func (e *Engine) checkRestorable(ctx context.Context, m layout.BackupManifest) error {
	if m.Engine != "postgres" {
		return fmt.Errorf("backup %q is of %s, not PostgreSQL", m.Name, m.Engine)
	}
	out, err := exec.CommandContext(ctx, "postgres", "--version").Output()
	if err != nil {
		return fmt.Errorf("postgres --version: %w", err)
	}
	local := majorVersion(string(out))
	if local == "" || local != majorVersion(m.Version) {
		return fmt.Errorf("backup %q is of PostgreSQL %s; this server is %s: a backup restores only into its major version",
			m.Name, m.Version, strings.TrimSpace(string(out)))
	}
	return nil
}

var majorPattern = regexp.MustCompile(`(?:^|\s)(\d+)(?:\.\d+)?`)

// majorVersion is the major version in "15.14", "15.14 (Debian 15.14-0+deb12u1)"
// or "postgres (PostgreSQL) 15.14".
func majorVersion(s string) string {
	if m := majorPattern.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// extract unpacks the tar that download writes into PGDATA.
func (e *Engine) extract(ctx context.Context, download func(io.Writer) error) error {
	return backup.ExtractTar(download, e.DataDir)
}

// RestoreArgs are the server arguments of a restore's recovery: WAL from
// the archive with the instance program's wal-fetch (program is its path),
// up to targetTime when set, then promotion.
func RestoreArgs(program string, targetTime *time.Time) []string {
	args := []string{
		"-c", "restore_command=" + shellQuote(program) + " " + layout.CommandWALFetch + " %f %p",
		"-c", "recovery_target_action=promote",
		"-c", "recovery_target_timeline=latest",
	}
	if targetTime != nil {
		args = append(args, "-c", "recovery_target_time="+targetTime.UTC().Format("2006-01-02 15:04:05.000000+00"))
	}
	return args
}

// ExplainExit says why a restoring server stopped during its recovery: the
// archive lacks a WAL segment it needs, or does not reach the target time
// (the server's log says which).
func (e *Engine) ExplainExit() string {
	if e.Restore == nil || !e.recovering() {
		return ""
	}
	return fmt.Sprintf("restoring backup %q: the server stopped while recovering from the archive: a WAL segment is missing from it, "+
		"or it does not reach the target time (the server's log says which)", e.Restore.Backup)
}

// recovering reports whether PGDATA still has to finish a restore's
// recovery (the server removes recovery.signal when it promotes).
func (e *Engine) recovering() bool {
	_, err := os.Stat(filepath.Join(e.DataDir, recoverySignal))
	return err == nil
}

// withoutSettings drops the named settings from a postgresql.conf.
func withoutSettings(conf string, names []string) string {
	var lines []string
	for _, line := range strings.Split(conf, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if line == "" || slices.Contains(names, strings.TrimSpace(name)) {
			continue
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
