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
// data can still follow its primary. A replica whose slot is gone (dropped
// while it was scaled away, or invalidated when it fell too far behind)
// misses WAL the primary no longer keeps: its data directory is emptied so
// the replica clones again. A replica whose data belongs to another cluster
// (another system identifier) is refused, never overwritten: that data may
// be all that is left of the database. A primary it cannot reach yet leaves
// the data as it is.
func (e *Engine) PrepareData(ctx context.Context, log *slog.Logger) error {
	r := e.Replication
	if r.CloneFrom == "" || r.Password == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(e.DataDir, standbySignal)); err != nil {
		return nil // empty, or a primary's data
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	primary, err := r.replicationConnection(ctx)
	if err != nil {
		log.Info("the primary cannot be asked about this replica's slot yet; starting on the data as it is", "error", err.Error())
		return nil
	}
	defer primary.Close(ctx)
	primaryID, err := identifySystem(ctx, primary)
	if err != nil {
		return err
	}
	localID, err := e.systemIdentifier(ctx)
	if err != nil {
		return err
	}
	if primaryID != localID {
		return fmt.Errorf("this replica's data belongs to another cluster (system identifier %s, the primary's %s): refusing to clone over it; "+
			"move the data away or delete the volume claim to make this instance a new replica", localID, primaryID)
	}
	exists, err := slotExists(ctx, primary, r.SlotName)
	if err != nil || exists {
		return err
	}
	log.Info("this replica's slot is gone from the primary, so WAL it needs may be too: cloning the primary again", "slot", r.SlotName)
	return os.RemoveAll(e.DataDir)
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

// identifySystem is the primary's system identifier.
func identifySystem(ctx context.Context, conn *pgconn.PgConn) (string, error) {
	results, err := conn.Exec(ctx, "IDENTIFY_SYSTEM").ReadAll()
	if err != nil {
		return "", fmt.Errorf("IDENTIFY_SYSTEM: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) < 1 {
		return "", errors.New("IDENTIFY_SYSTEM returned no row")
	}
	return string(results[0].Rows[0][0]), nil
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

// systemIdentifier reads the data directory's system identifier with
// pg_controldata.
func (e *Engine) systemIdentifier(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "pg_controldata", "-D", e.DataDir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pg_controldata: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if value, ok := strings.CutPrefix(line, "Database system identifier:"); ok {
			id := strings.TrimSpace(value)
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				return "", fmt.Errorf("pg_controldata: system identifier %q", id)
			}
			return id, nil
		}
	}
	return "", errors.New("pg_controldata printed no system identifier")
}
