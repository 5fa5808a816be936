package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbpilot/dbpilot/instance"
)

// standbySignal marks a replica's data directory.
const standbySignal = "standby.signal"

// PrepareData checks, before the server starts, that a replica's existing
// data can still follow its primary. A former primary's data (another
// instance is designated the primary) is rewound with pg_rewind and made a
// replica's; so is a replica that diverged (promoted on its own, or past
// the point where the primary's timeline left its own). A replica that
// still cannot follow (pg_rewind failed), or whose slot is gone (dropped
// while it was scaled away, or invalidated when it fell too far behind, so
// WAL it needs may be gone too), has its data directory emptied and clones
// again. A replica whose data belongs to another cluster (another system
// identifier) is refused, never overwritten: that data may be all that is
// left of the database. A primary it cannot reach yet leaves the data as it
// is.
func (e *Engine) PrepareData(ctx context.Context, creds instance.Credentials, log *slog.Logger) error {
	if err := e.removeStaleLocks(); err != nil {
		return err
	}
	// The WAL receiver reads the replication password from its file.
	if err := e.Replication.writePassFile(); err != nil {
		return fmt.Errorf("writing the replication password file: %w", err)
	}
	if err := e.writeHBA(creds.Username); err != nil {
		return fmt.Errorf("writing pg_hba.conf: %w", err)
	}
	if _, err := os.Stat(filepath.Join(e.DataDir, standbySignal)); err != nil {
		initialized, err := e.Initialized()
		if err != nil || !initialized || e.Replication.CloneFrom == "" {
			return err // empty, or the designated primary's data
		}
		log.Info("this instance's data is a primary's, and another instance is designated the primary: rewinding it to follow the new primary")
		if err := e.rewindToReplica(ctx, creds, log); err != nil {
			return err
		}
	}
	why, err := e.replicaProblem(ctx, 0)
	if err != nil || why == "" {
		return err
	}
	if strings.HasPrefix(why, divergedPrefix) {
		log.Info("this replica diverged from its primary: rewinding it", "why", why)
		// pg_rewind's crash recovery runs a single-user server, which
		// refuses a standby's data directory.
		if err := os.Remove(filepath.Join(e.DataDir, standbySignal)); err != nil {
			return err
		}
		if err := e.rewindToReplica(ctx, creds, log); err != nil {
			return err
		}
		if why, err = e.replicaProblem(ctx, 0); err != nil || why == "" {
			return err
		}
	}
	log.Info("this replica's data can no longer follow its primary: cloning the primary again", "why", why)
	return e.Discard()
}

// removeStaleLocks removes the lock files a server that was killed leaves
// (postmaster.pid, and its socket's lock in the socket directory, an
// emptyDir that outlives the container): the PID in them may now be any
// process's, since a new container numbers them anew, and the server (or
// pg_rewind's crash recovery) would refuse to start. No server runs on this
// data directory while the program prepares it.
func (e *Engine) removeStaleLocks() error {
	for _, path := range []string{
		filepath.Join(e.DataDir, "postmaster.pid"),
		filepath.Join(e.SocketDir, fmt.Sprintf(".s.PGSQL.%d.lock", e.port())),
	} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// divergedPrefix starts the reason of a replica whose data went past its
// primary's history.
const divergedPrefix = "it diverged: "

// rewindToReplica rewinds a former primary's stopped data to follow the
// primary and makes it a replica's.
func (e *Engine) rewindToReplica(ctx context.Context, creds instance.Credentials, log *slog.Logger) error {
	if err := e.rewind(ctx, creds, log); err != nil {
		return err
	}
	if err := e.writeStandbyConfig(ctx); err != nil {
		return fmt.Errorf("making the former primary's data a replica's: %w", err)
	}
	return nil
}

// Unusable reports a running replica that does not stream and whose data
// can no longer follow its primary (its slot was invalidated while it fell
// behind, or dropped).
func (e *Engine) Unusable(ctx context.Context) string {
	conn, err := e.connect(ctx)
	if err != nil {
		return ""
	}
	recovering, err := inRecovery(ctx, conn)
	var notStreaming error
	var replayed string
	if err == nil && recovering {
		notStreaming = streaming(ctx, conn)
		// Recovery replays the local WAL before it streams: a former
		// primary's replay position is where its own WAL ends, which
		// may be past its last checkpoint (all pg_controldata tells).
		err = conn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn()::text, '0/0')").Scan(&replayed)
	}
	conn.Close(ctx)
	if err != nil || notStreaming == nil {
		return ""
	}
	position, _ := parseLSN(replayed)
	why, _ := e.replicaProblem(ctx, position)
	return why
}

// rewindWait bounds how long a former primary waits for the new primary to
// answer before it rewinds.
const rewindWait = 5 * time.Minute

// rewind runs pg_rewind against the new primary: the former primary's data
// (after crash recovery, which pg_rewind runs itself) loses what it wrote
// past the point where the new primary's history left its timeline, and
// takes the new primary's changes since. A former primary that did not
// diverge is left as it is. When pg_rewind fails, the data is left to the
// replica checks, which clone again if it cannot follow.
func (e *Engine) rewind(ctx context.Context, creds instance.Credentials, log *slog.Logger) error {
	r := e.Replication
	waitCtx, cancel := context.WithTimeout(ctx, rewindWait)
	err := instance.WaitFor(waitCtx, func(ctx context.Context) error {
		conn, err := r.replicationConnection(ctx)
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
	cancel()
	if err != nil {
		return fmt.Errorf("the new primary at %s does not answer, so this former primary cannot rewind to follow it: %w", r.CloneFrom, err)
	}
	mode, err := r.sslMode(ctx, r.CloneFrom)
	if err != nil {
		return fmt.Errorf("asking the new primary %s for TLS: %w", r.CloneFrom, err)
	}
	cmd := exec.CommandContext(ctx, "pg_rewind", RewindArgs(e.DataDir, r)...)
	// The superuser's password goes in the environment, never on a
	// command line or in a log.
	cmd.Env = append(os.Environ(), "PGPASSWORD="+creds.SuperuserPassword, "PGCONNECT_TIMEOUT=10", "LC_ALL=C")
	cmd.Env = append(cmd.Env, r.sslEnv(mode)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log.Info("pg_rewind failed; the replica checks decide whether the data can follow", "error", err.Error(), "output", lastLines(string(out), 5))
		return nil
	}
	log.Info("pg_rewind done", "output", lastLines(string(out), 3))
	return nil
}

// RewindArgs are pg_rewind's arguments to rewind dataDir to the primary
// r names, connecting as the superuser.
func RewindArgs(dataDir string, r Replication) []string {
	source := strings.Join([]string{"host=" + conninfoValue(r.CloneFrom), "port=" + strconv.Itoa(r.port()),
		"user=" + Superuser, "dbname=postgres"}, " ")
	return []string{"--target-pgdata=" + dataDir, "--source-server=" + source}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Discard removes the data directory; the next start clones.
func (e *Engine) Discard() error { return os.RemoveAll(e.DataDir) }

// replicaProblem asks the primary whether this replica's data can follow
// it: "" when it can, or when the primary cannot be asked (it may be
// starting); why not otherwise. Data of another cluster is an error: it is
// refused, never discarded. replayed is how far a running replica has
// replayed its WAL (0 when stopped).
func (e *Engine) replicaProblem(ctx context.Context, replayed uint64) (string, error) {
	r := e.Replication
	if r.CloneFrom == "" || r.Password == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	primary, err := r.replicationConnection(ctx)
	if err != nil {
		return "", nil
	}
	defer primary.Close(ctx)
	primarySystem, err := identifySystem(ctx, primary)
	if err != nil {
		return "", err
	}
	local, err := e.controlData(ctx)
	if err != nil {
		return "", err
	}
	local.position = max(local.position, replayed)
	if primarySystem.id != local.systemID {
		return "", fmt.Errorf("this replica's data belongs to another cluster (system identifier %s, the primary's %s): refusing to clone over it; "+
			"move the data away or delete the volume claim to make this instance a new replica", local.systemID, primarySystem.id)
	}
	var history string
	if local.timeline < primarySystem.timeline {
		if history, err = timelineHistory(ctx, primary, primarySystem.timeline); err != nil {
			return "", err
		}
	}
	if why := divergence(local, primarySystem.timeline, history); why != "" {
		return divergedPrefix + why, nil
	}
	exists, err := slotExists(ctx, primary, r.SlotName)
	if err != nil || exists {
		return "", err
	}
	return fmt.Sprintf("its slot %s is gone from the primary, so WAL it needs may be too", r.SlotName), nil
}

// replicationConnection opens a physical replication connection to the
// primary as the replication user.
func (r Replication) replicationConnection(ctx context.Context) (*pgconn.PgConn, error) {
	mode, err := r.sslMode(ctx, r.CloneFrom)
	if err != nil {
		return nil, err
	}
	cfg, err := r.replicationConfig(mode)
	if err != nil {
		return nil, err
	}
	return pgconn.ConnectConfig(ctx, cfg)
}

// replicationConfig is the configuration of a physical replication
// connection to the primary with sslmode. The host is parsed with the
// sslmode, never set afterwards: pgconn derives the TLS configuration (and
// the name verify-full checks) from the host it parses.
func (r Replication) replicationConfig(mode string) (*pgconn.Config, error) {
	conninfo := append([]string{"host=" + conninfoValue(r.CloneFrom), "port=" + strconv.Itoa(r.port()),
		"user=" + ReplicationUser, "replication=true", "connect_timeout=10"}, r.sslOptions(mode)...)
	cfg, err := pgconn.ParseConfig(strings.Join(conninfo, " "))
	if err != nil {
		return nil, err
	}
	cfg.Password = r.Password
	return cfg, nil
}

// primarySystem is what IDENTIFY_SYSTEM tells of the primary.
type primarySystem struct {
	id       string
	timeline int
}

// identifySystem asks the primary for its system identifier and timeline.
func identifySystem(ctx context.Context, conn *pgconn.PgConn) (primarySystem, error) {
	results, err := conn.Exec(ctx, "IDENTIFY_SYSTEM").ReadAll()
	if err != nil {
		return primarySystem{}, fmt.Errorf("IDENTIFY_SYSTEM: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) < 2 {
		return primarySystem{}, errors.New("IDENTIFY_SYSTEM returned no row")
	}
	row := results[0].Rows[0]
	timeline, err := strconv.Atoi(string(row[1]))
	if err != nil {
		return primarySystem{}, fmt.Errorf("IDENTIFY_SYSTEM: timeline %q", row[1])
	}
	return primarySystem{id: string(row[0]), timeline: timeline}, nil
}

// timelineHistory is the primary's history file of a timeline.
func timelineHistory(ctx context.Context, conn *pgconn.PgConn, timeline int) (string, error) {
	results, err := conn.Exec(ctx, "TIMELINE_HISTORY "+strconv.Itoa(timeline)).ReadAll()
	if err != nil {
		return "", fmt.Errorf("TIMELINE_HISTORY: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) < 2 {
		return "", errors.New("TIMELINE_HISTORY returned no row")
	}
	return string(results[0].Rows[0][1]), nil
}

// divergence says why a replica's data cannot follow the primary's
// timeline, or "": the replica went ahead on a timeline of its own (it was
// promoted), or its data goes past the point where the primary's history
// left the replica's timeline. history is the primary's history file when
// the primary's timeline is newer.
func divergence(local controlData, primaryTimeline int, history string) string {
	switch {
	case local.timeline > primaryTimeline:
		return fmt.Sprintf("its timeline %d is ahead of the primary's %d", local.timeline, primaryTimeline)
	case local.timeline == primaryTimeline:
		return ""
	}
	for _, line := range strings.Split(history, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != strconv.Itoa(local.timeline) {
			continue
		}
		switchPoint, err := parseLSN(fields[1])
		if err != nil {
			return ""
		}
		if local.position > switchPoint {
			return fmt.Sprintf("its data goes to %s on timeline %d, past %s where the primary left that timeline", formatLSN(local.position), local.timeline, fields[1])
		}
		return ""
	}
	return fmt.Sprintf("the primary's history does not contain its timeline %d", local.timeline)
}

// slotExists reports whether the primary has a physical slot of the name
// that still holds WAL (READ_REPLICATION_SLOT answers NULLs for a missing
// slot, and a NULL restart position for an invalidated one).
func slotExists(ctx context.Context, conn *pgconn.PgConn, slot string) (bool, error) {
	results, err := conn.Exec(ctx, "READ_REPLICATION_SLOT "+slot).ReadAll()
	if err != nil {
		return false, fmt.Errorf("READ_REPLICATION_SLOT: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) < 2 {
		return false, errors.New("READ_REPLICATION_SLOT returned no row")
	}
	row := results[0].Rows[0]
	return row[0] != nil && row[1] != nil, nil
}

// controlData is what pg_controldata tells of a stopped data directory.
type controlData struct {
	systemID string
	timeline int
	// position is how far the data goes: the later of the last checkpoint
	// and the minimum recovery point.
	position uint64
}

// controlData reads the data directory's control file with pg_controldata.
func (e *Engine) controlData(ctx context.Context) (controlData, error) {
	cmd := exec.CommandContext(ctx, "pg_controldata", "-D", e.DataDir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return controlData{}, fmt.Errorf("pg_controldata: %w", err)
	}
	return parseControlData(string(out))
}

// parseControlData reads pg_controldata's output.
func parseControlData(out string) (controlData, error) {
	var c controlData
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch name {
		case "Database system identifier":
			c.systemID = value
		case "Latest checkpoint's TimeLineID":
			c.timeline, _ = strconv.Atoi(value)
		case "Latest checkpoint location", "Minimum recovery ending location":
			if lsn, err := parseLSN(value); err == nil && lsn > c.position {
				c.position = lsn
			}
		}
	}
	if _, err := strconv.ParseUint(c.systemID, 10, 64); err != nil || c.timeline == 0 {
		return c, errors.New("pg_controldata printed no system identifier or timeline")
	}
	return c, nil
}

// parseLSN reads a WAL position written as "16/B374D848".
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("WAL position %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q", s)
	}
	return h<<32 | l, nil
}

func formatLSN(lsn uint64) string { return fmt.Sprintf("%X/%X", lsn>>32, lsn&0xFFFFFFFF) }
