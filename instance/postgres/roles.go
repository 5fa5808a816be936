package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var (
	_ instance.Promoter = (*Engine)(nil)
	_ instance.Demoter  = (*Engine)(nil)
)

// Promote ends the replica's recovery, once it has replayed the WAL it
// received, and creates the slots the other instances stream through.
func (e *Engine) Promote(ctx context.Context, req layout.PromoteRequest) error {
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	recovering, err := inRecovery(ctx, conn)
	if err != nil {
		return err
	}
	if recovering {
		var promoted bool
		if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&promoted); err != nil {
			return fmt.Errorf("pg_promote: %w", err)
		}
		if !promoted {
			return errors.New("the promotion did not finish within 60 s")
		}
		// The control file names the new timeline only after a
		// checkpoint, and pg_rewind reads the timeline there: a former
		// primary rewinding against this one must see it.
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			return fmt.Errorf("checkpoint after the promotion: %w", err)
		}
	}
	for _, slot := range req.Slots {
		if slot != layout.SlotName(slot) {
			return fmt.Errorf("%q is not a slot name", slot)
		}
		if _, err := conn.Exec(ctx, `SELECT pg_create_physical_replication_slot($1, true)
WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, slot); err != nil {
			return fmt.Errorf("creating slot %s: %w", slot, err)
		}
	}
	return nil
}

// Demote stops the primary with a fast shutdown (its WAL senders send the
// replicas everything up to the shutdown checkpoint before it exits) and
// makes its data a replica's, which follows the designated primary on the
// next start.
func (e *Engine) Demote(ctx context.Context, stop func() error) (string, error) {
	if err := stop(); err != nil {
		return "", err
	}
	if err := e.writeStandbyConfig(ctx); err != nil {
		return "", err
	}
	control, err := e.controlData(ctx)
	if err != nil {
		return "", err
	}
	return formatLSN(control.position), nil
}

// standbySettings are the settings writeStandbyConfig owns in
// postgresql.auto.conf.
var standbySettings = []string{"primary_conninfo", "primary_slot_name"}

// writeStandbyConfig makes the stopped data directory a replica's: the
// standby signal, and the primary's address and this instance's slot in
// postgresql.auto.conf (mode 0600, like the rest of PGDATA).
func (e *Engine) writeStandbyConfig(ctx context.Context) error {
	r := e.Replication
	if r.PrimaryHost == "" {
		return errors.New("a replica needs the primary's host")
	}
	path := filepath.Join(e.DataDir, "postgresql.auto.conf")
	existing, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(path, []byte(StandbyConfig(string(existing), r, e.standbySSLMode(ctx))), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.DataDir, standbySignal), nil, 0o600)
}

// standbyProbeTimeout bounds asking the primary a replica follows next
// whether it serves a verified certificate: a demotion asks it while
// writes wait.
const standbyProbeTimeout = 2 * time.Second

// standbySSLMode is the sslmode of a replica's first connection to the
// primary it follows next, chosen so that it verifies the primary from
// that connection whenever it can: a reconnection to verify it later
// (SecureReplication's reload) restarts the WAL receiver, and a
// switchover waiting for this replica to catch up would wait for that.
//
//   - verify-full when the primary serves a certificate of the Database's
//     authority, or when nothing answers yet while this pod has its
//     certificate: a demoted primary asks while the read-write Service has
//     no primary (the switchover's target is still catching up), and the
//     pod it follows next mounts the certificate this one serves (a
//     rollout that brings certificates restarts the primary last, so a
//     primary with one has no replica without);
//   - prefer (libpq's default, TLS unverified) when this pod has no
//     certificate, when the primary answers that it serves no TLS, or with
//     a certificate that does not verify (an authority changing): as
//     before, until SecureReplication finds it verifies.
func (e *Engine) standbySSLMode(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, standbyProbeTimeout)
	defer cancel()
	mode, err := e.Replication.sslMode(ctx, e.Replication.PrimaryHost)
	switch {
	case errors.Is(err, errNoAnswer):
		return sslVerifyFull
	case err != nil:
		return sslPrefer
	}
	return mode
}

// StandbyConfig is postgresql.auto.conf with the standby settings of r in
// place of any earlier ones, connecting with sslmode (libpq's default when
// empty).
func StandbyConfig(existing string, r Replication, sslmode string) string {
	lines := strings.Split(strings.TrimSuffix(withoutSettings(existing, standbySettings), "\n"), "\n")
	if lines[0] == "" {
		lines = nil
	}
	lines = append(lines,
		"primary_conninfo = "+literal(r.primaryConninfo(sslmode)),
		"primary_slot_name = "+literal(r.SlotName))
	return strings.Join(lines, "\n") + "\n"
}

// primaryConninfo is how a replica connects to its primary.
func (r Replication) primaryConninfo(sslmode string) string {
	return strings.Join(append([]string{
		"host=" + conninfoValue(r.PrimaryHost),
		"port=" + strconv.Itoa(r.port()),
		"user=" + ReplicationUser,
		"passfile=" + conninfoValue(r.PassFile),
		"application_name=" + conninfoValue(r.SlotName),
	}, r.sslOptions(sslmode)...), " ")
}

// conninfoValue quotes a libpq connection string value.
func conninfoValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
