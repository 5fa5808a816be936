package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var (
	_ instance.Promoter     = (*Engine)(nil)
	_ instance.Demoter      = (*Engine)(nil)
	_ instance.DataPreparer = (*Engine)(nil)
)

// rejoinFile, in a former primary's datadir, says it is to replicate from
// the designated primary from its own GTID position, once it runs.
const rejoinFile = "dbpilot-rejoin"

// errFailoverMySQL is the answer of a MySQL instance to a promotion or a
// demotion: only MariaDB changes roles yet.
var errFailoverMySQL = errors.New("MySQL instances do not change roles yet")

// PrepareData makes a former primary's datadir a replica's when another
// instance is designated the primary: it starts read-only and replicates
// from the new primary from its own GTID position. If it wrote
// transactions the new primary never received, the new primary refuses
// that position and the replica clones again (the data watcher).
func (e *Engine) PrepareData(_ context.Context, _ instance.Credentials, log *slog.Logger) error {
	if e.Flavor != MariaDB || e.Replication.CloneFrom == "" || e.hasReplicaData() {
		return nil
	}
	initialized, err := e.Initialized()
	if err != nil || !initialized {
		return err
	}
	log.Info("this instance's data is a primary's, and another instance is designated the primary: it becomes a replica")
	return e.markRejoin()
}

func (e *Engine) markRejoin() error {
	return os.WriteFile(filepath.Join(e.DataDir, rejoinFile), nil, 0o600)
}

// Promote stops the replica's I/O thread, waits until the SQL thread has
// applied everything received, and makes the server a writable primary.
func (e *Engine) Promote(ctx context.Context, _ layout.PromoteRequest) error {
	if e.Flavor != MariaDB {
		return errFailoverMySQL
	}
	e.promoting.Store(true)
	defer e.promoting.Store(false)
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return err
	}
	defer db.Close()
	replica, _, _, err := replicaFields(ctx, db)
	if err != nil {
		return err
	}
	if replica {
		if _, err := db.ExecContext(ctx, "STOP SLAVE IO_THREAD"); err != nil {
			return fmt.Errorf("stopping the I/O thread: %w", err)
		}
		if err := instance.WaitFor(ctx, func(ctx context.Context) error { return relayApplied(ctx, db) }); err != nil {
			return fmt.Errorf("applying the relay log: %w", err)
		}
		statements := PromoteStatements()
		// Its users were its former primary's; whether the application
		// user needs its certificate is this instance's to say (a
		// rollout that changes it switches over to an updated replica).
		// Before commits wait for a replica, which it has none of yet.
		if user := e.applicationUser.Load(); user != nil {
			statements = append(statements, ApplicationRequireStatement(*user, e.RequireClientCertificate))
		}
		if e.Replication.SemiSync {
			statements = append(statements, semiSyncStatement(e.Flavor))
		}
		for _, stmt := range statements {
			if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
				return fmt.Errorf("%s: %w", stmt.What, err)
			}
		}
	} else if _, err := db.ExecContext(ctx, "SET GLOBAL read_only = OFF"); err != nil {
		return fmt.Errorf("making the primary writable: %w", err)
	}
	for _, name := range []string{cloneGTIDFile, rejoinFile} {
		if err := os.Remove(filepath.Join(e.DataDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// PromoteStatements make a replica whose relay log is applied a primary.
func PromoteStatements() []Statement {
	return []Statement{
		{"stopping replication", "STOP SLAVE"},
		{"forgetting the former primary", "RESET SLAVE ALL"},
		{"making the primary writable", "SET GLOBAL read_only = OFF"},
	}
}

// relayApplied returns nil once the SQL thread has executed every event
// the I/O thread received.
func relayApplied(ctx context.Context, db *sql.DB) error {
	_, _, fields, err := replicaFields(ctx, db)
	if err != nil {
		return err
	}
	caughtUp := fields["Master_Log_File"] == fields["Relay_Master_Log_File"] && fields["Read_Master_Log_Pos"] == fields["Exec_Master_Log_Pos"]
	if caughtUp || strings.Contains(fields["Slave_SQL_Running_State"], "has read all relay log") {
		return nil
	}
	if fields["Slave_SQL_Running"] != "Yes" {
		return fmt.Errorf("the SQL thread stopped: %s", fields["Last_SQL_Error"])
	}
	return errors.New("the SQL thread is still applying")
}

// Demote fences the primary (read-only: the application's sessions can no
// longer write), notes its GTID position, stops it and marks its datadir to
// rejoin the designated primary on the next start.
func (e *Engine) Demote(ctx context.Context, stop func() error) (string, error) {
	if e.Flavor != MariaDB {
		return "", errFailoverMySQL
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return "", err
	}
	var position string
	_, err = db.ExecContext(ctx, "SET GLOBAL read_only = ON")
	if err == nil {
		err = db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&position)
	}
	db.Close()
	if err != nil {
		return "", fmt.Errorf("fencing the primary: %w", err)
	}
	if err := stop(); err != nil {
		return "", err
	}
	return position, e.markRejoin()
}

// rejoinTimeout bounds the statements that point a former primary at the
// new one.
const rejoinTimeout = 30 * time.Second

// RejoinStatements point a former primary at the designated primary from
// its own GTID position (gtid_current_pos: what it wrote and what it
// replicated), verifying its certificate when verifyTLS is set.
func RejoinStatements(r Replication, verifyTLS bool) []Statement {
	return []Statement{
		{"pointing the former primary at the new one", fmt.Sprintf(
			"CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=current_pos, MASTER_CONNECT_RETRY=5",
			quoteString(r.primaryHost()), r.port(), quoteString(ReplicationUser), quoteString(r.Password)) + tlsClause(r, verifyTLS)},
		{"starting replication", "START SLAVE"},
	}
}

// rejoinVerifiesTLS is whether a former primary rejoining the designated
// one verifies its certificate from its first connection, so it needs no
// restart of its replica threads to verify it later (SecureReplication):
// when the primary serves a certificate of the Database's authority, and
// when nothing answers yet while this pod has its certificate (the
// switchover's target not promoted yet: the pod it follows next mounts the
// certificate this one serves, since a rollout that brings certificates
// restarts the primary last). A primary that serves no TLS, or a
// certificate that does not verify, is followed without TLS until
// SecureReplication finds it verifies, as before.
func (r Replication) rejoinVerifiesTLS(ctx context.Context) bool {
	verified, err := r.primaryServesVerifiedTLS(ctx)
	var unreachable *net.OpError
	return verified || (r.TLS.Enabled() && errors.As(err, &unreachable))
}

// startRejoin points a former primary at the designated one, once.
func (e *Engine) startRejoin(ctx context.Context, db *sql.DB) error {
	path := filepath.Join(e.DataDir, rejoinFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rejoinTimeout)
	defer cancel()
	for _, stmt := range RejoinStatements(e.Replication, e.Replication.rejoinVerifiesTLS(ctx)) {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	return os.Remove(path)
}
