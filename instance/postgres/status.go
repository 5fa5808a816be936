package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// statusQuery reads role, position, lag, timeline and version in one round
// trip. On a replica the position is the WAL received (replayed, before it
// streams), the lag in bytes what
// was received and not replayed yet, and the lag in seconds the age of the
// last replayed transaction while WAL is still waiting (0 when caught up).
const statusQuery = `
SELECT pg_is_in_recovery(),
       CASE WHEN pg_is_in_recovery() THEN greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::text ELSE pg_current_wal_lsn()::text END,
       CASE WHEN pg_is_in_recovery() THEN pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint END,
       CASE WHEN pg_is_in_recovery() THEN
              CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                   ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END
       END::float8,
       coalesce((SELECT status = 'streaming' FROM pg_stat_wal_receiver), false),
       (SELECT timeline_id FROM pg_control_checkpoint()),
       current_setting('server_version')`

// pendingRestartQuery names the settings of the configuration file the
// server takes only at its next start.
const pendingRestartQuery = `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM pg_settings WHERE pending_restart`

// Status reports the instance.
func (e *Engine) Status(ctx context.Context) (instance.Status, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return instance.Status{}, err
	}
	defer conn.Close(ctx)
	var s instance.Status
	var recovering bool
	if err := conn.QueryRow(ctx, statusQuery).Scan(&recovering, &s.Position, &s.LagBytes, &s.LagSeconds, &s.Replicating, &s.Timeline, &s.Version); err != nil {
		return instance.Status{}, err
	}
	if err := conn.QueryRow(ctx, pendingRestartQuery).Scan(&s.PendingRestart); err != nil {
		return instance.Status{}, err
	}
	s.ParametersError, _ = e.parameters.Report()
	s.Role = layout.RolePrimary
	if recovering {
		s.Role = layout.RoleReplica
		return s, nil
	}
	if s.Slots, err = slotNames(ctx, conn); err != nil {
		return s, err
	}
	if e.Archive {
		s.Archive, err = archiveStatus(ctx, conn)
	}
	return s, err
}

// archiveStatus reads pg_stat_archiver.
func archiveStatus(ctx context.Context, conn *pgx.Conn) (*layout.ArchiveStatus, error) {
	var a layout.ArchiveStatus
	var archived, failed *string
	err := conn.QueryRow(ctx, `SELECT last_archived_wal, last_archived_time, last_failed_wal, last_failed_time, failed_count FROM pg_stat_archiver`).
		Scan(&archived, &a.LastArchivedTime, &failed, &a.LastFailedTime, &a.FailedCount)
	if archived != nil {
		a.LastArchived = *archived
	}
	if failed != nil {
		a.LastFailed = *failed
	}
	return &a, err
}
