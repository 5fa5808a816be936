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
)

// standbySignal marks a replica's data directory.
const standbySignal = "standby.signal"

// PrepareData checks, before the server starts, that a replica's existing
// data can still follow its primary. A replica that diverged (promoted on
// its own, or past the point where the primary's timeline left its own), or
// whose slot is gone (dropped while it was scaled away, or invalidated when
// it fell too far behind, so WAL it needs may be gone too), has its data
// directory emptied and clones again. A replica whose data belongs to another cluster
// (another system identifier) is refused, never overwritten: that data may
// be all that is left of the database. A primary it cannot reach yet leaves
// the data as it is.
func (e *Engine) PrepareData(ctx context.Context, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(e.DataDir, standbySignal)); err != nil {
		initialized, err := e.Initialized()
		if err != nil || !initialized || e.Replication.CloneFrom == "" {
			return err // empty, or the designated primary's data
		}
		// A primary's data on an instance designated a replica: the
		// operator chose another primary while this one was away. It
		// becomes a replica of the new primary, if its data can follow.
		log.Info("this instance's data is a primary's, and another instance is designated the primary: it becomes a replica")
		if err := e.writeStandbyConfig(); err != nil {
			return fmt.Errorf("making the former primary's data a replica's: %w", err)
		}
	}
	why, err := e.replicaProblem(ctx)
	if err != nil || why == "" {
		return err
	}
	log.Info("this replica's data can no longer follow its primary: cloning the primary again", "why", why)
	return e.Discard()
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
	if err == nil && recovering {
		notStreaming = streaming(ctx, conn)
	}
	conn.Close(ctx)
	if err != nil || notStreaming == nil {
		return ""
	}
	why, _ := e.replicaProblem(ctx)
	return why
}

// Discard removes the data directory; the next start clones.
func (e *Engine) Discard() error { return os.RemoveAll(e.DataDir) }

// replicaProblem asks the primary whether this replica's data can follow
// it: "" when it can, or when the primary cannot be asked (it may be
// starting); why not otherwise. Data of another cluster is an error: it is
// refused, never discarded.
func (e *Engine) replicaProblem(ctx context.Context) (string, error) {
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
		return "it diverged: " + why, nil
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
	cfg, err := pgconn.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password = r.CloneFrom, uint16(r.port()), ReplicationUser, r.Password
	cfg.RuntimeParams["replication"] = "true"
	cfg.ConnectTimeout = 10 * time.Second
	return pgconn.ConnectConfig(ctx, cfg)
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
