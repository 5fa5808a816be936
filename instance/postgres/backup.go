package postgres

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// baseArtifact is the base backup's one artifact: PGDATA as a tar, with
// the WAL that makes it consistent.
const baseArtifact = "base.tar.gz"

// Backup takes a base backup of this instance (a primary, or a replica, so
// the primary is not loaded) with pg_basebackup over the local socket,
// streamed compressed into the store, and writes its manifest last. The
// WAL from the backup's start to its end is in the tar (fetched at the
// end), so the backup restores on its own; the WAL archive takes it further.
func (e *Engine) Backup(ctx context.Context, store objectstore.Store, name, instanceName string) (layout.BackupManifest, error) {
	m := layout.BackupManifest{Name: name, Engine: "postgres", Instance: instanceName, StartTime: time.Now().UTC()}
	var segmentSize string
	conn, err := e.connect(ctx)
	if err != nil {
		return m, err
	}
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version'), system_identifier::text, current_setting('wal_segment_size') FROM pg_control_system()").
		Scan(&m.Version, &m.SystemID, &segmentSize)
	conn.Close(ctx)
	if err != nil {
		return m, fmt.Errorf("reading the server's version and system identifier: %w", err)
	}
	cmd := exec.CommandContext(ctx, "pg_basebackup", BaseBackupArgs(e.SocketDir, e.port())...)
	file, log, err := backup.UploadOutput(ctx, store, backup.ArtifactKey(name, baseArtifact), cmd)
	if err != nil {
		return m, err
	}
	m.EndTime = time.Now().UTC()
	m.Files = []layout.ArtifactFile{file}
	start, end, err := ParseBaseBackupLog(log)
	if err != nil {
		return m, err
	}
	m.Timeline, m.StartPosition, m.EndPosition = start.timeline, start.lsn, end.lsn
	size, err := parseSegmentSize(segmentSize)
	if err != nil {
		return m, err
	}
	if m.StartWAL, err = SegmentName(start.timeline, start.lsn, size); err != nil {
		return m, err
	}
	return m, backup.WriteManifest(ctx, store, m)
}

// BaseBackupArgs are pg_basebackup's arguments for a base backup of the
// local server as a tar on stdout, with the WAL it needs fetched into it
// and a fast checkpoint (a restartpoint on a replica) so it starts at once.
func BaseBackupArgs(socketDir string, port int) []string {
	return []string{
		"--host=" + socketDir,
		"--port=" + strconv.Itoa(port),
		"--username=" + Superuser,
		"--pgdata=-",
		"--format=tar",
		"--wal-method=fetch",
		"--checkpoint=fast",
		"--no-manifest",
		"--verbose",
	}
}

// walPoint is a position pg_basebackup reported.
type walPoint struct {
	lsn      string
	timeline int
}

var walPointPattern = regexp.MustCompile(`write-ahead log (start|end) point: ([0-9A-F]+/[0-9A-F]+)(?: on timeline ([0-9]+))?`)

// ParseBaseBackupLog reads the backup's start and end positions from
// pg_basebackup's verbose output.
func ParseBaseBackupLog(log string) (start, end walPoint, err error) {
	for _, match := range walPointPattern.FindAllStringSubmatch(log, -1) {
		p := walPoint{lsn: match[2]}
		if match[3] != "" {
			p.timeline, _ = strconv.Atoi(match[3])
		}
		if match[1] == "start" {
			start = p
		} else {
			end = p
		}
	}
	if start.lsn == "" || end.lsn == "" || start.timeline == 0 {
		return start, end, fmt.Errorf("pg_basebackup reported no start or end position: %s", lastLines(log, 5))
	}
	return start, end, nil
}

// SegmentName is the name of the WAL segment that holds lsn on timeline.
func SegmentName(timeline int, lsn string, segmentSize uint64) (string, error) {
	hi, lo, ok := strings.Cut(lsn, "/")
	if !ok || segmentSize == 0 {
		return "", fmt.Errorf("%q is not a WAL position", lsn)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a WAL position", lsn)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a WAL position", lsn)
	}
	segment := (h<<32 | l) / segmentSize
	perID := (uint64(1) << 32) / segmentSize
	return fmt.Sprintf("%08X%08X%08X", timeline, segment/perID, segment%perID), nil
}

// parseSegmentSize reads wal_segment_size as SHOW prints it ("16MB").
func parseSegmentSize(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "MB"), 10, 64)
	if err != nil || !strings.HasSuffix(s, "MB") {
		return 0, fmt.Errorf("wal_segment_size %q is not in MB", s)
	}
	return n << 20, nil
}

// ArchiveArgs are the server arguments that archive every WAL segment with
// the instance program's wal-push (program is its path) and switch segments
// at least every timeout, which bounds how much a lost volume loses.
func ArchiveArgs(program string, timeout time.Duration) []string {
	return []string{
		"-c", "archive_mode=on",
		"-c", "archive_command=" + shellQuote(program) + " " + layout.CommandWALPush + " %p",
		"-c", fmt.Sprintf("archive_timeout=%d", int(timeout.Seconds())),
	}
}

// shellQuote quotes s for /bin/sh, which runs archive_command.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// programPath is the running program's path, for the commands PostgreSQL
// runs.
func programPath() string {
	path, err := os.Executable()
	if err != nil {
		return layout.InstanceBinary
	}
	return path
}

// WALNotNeeded reports whether an archived WAL file is older than the first
// segment the backup m needs.
func (e *Engine) WALNotNeeded(name string, _ time.Time, m layout.BackupManifest) bool {
	return backup.WALNotNeeded(name, m.StartWAL)
}
