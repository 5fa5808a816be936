package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// MetricsNamespace is postgres_exporter's prefix.
func (e *Engine) MetricsNamespace() string { return "pg" }

// Metrics reads the server's statistics under postgres_exporter's names:
// pg_stat_database, the connection and memory settings, replication, the
// archiver, the WAL directory, sessions and database sizes.
func (e *Engine) Metrics(ctx context.Context) ([]prometheus.Metric, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var out []prometheus.Metric
	for _, read := range []func(context.Context, *pgx.Conn) ([]prometheus.Metric, error){
		statDatabaseMetrics, settingsMetrics, replicationMetrics, archiverMetrics, walMetrics, activityMetrics, sizeMetrics,
	} {
		metrics, err := read(ctx, conn)
		if err != nil {
			return nil, err
		}
		out = append(out, metrics...)
	}
	return out, nil
}

// statDatabaseColumns are pg_stat_database's columns postgres_exporter
// exports as pg_stat_database_<column>: numbackends a gauge, the others
// counters.
var statDatabaseColumns = []string{"numbackends", "xact_commit", "xact_rollback", "blks_read", "blks_hit",
	"tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks"}

var statDatabaseDescs = func() map[string]*prometheus.Desc {
	descs := map[string]*prometheus.Desc{}
	for _, column := range statDatabaseColumns {
		descs[column] = prometheus.NewDesc("pg_stat_database_"+column, "pg_stat_database."+column+" of the database.", []string{"datname"}, nil)
	}
	return descs
}()

func statDatabaseMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	query := "SELECT datname"
	for _, column := range statDatabaseColumns {
		query += ", " + column + "::float8"
	}
	query += " FROM pg_stat_database WHERE datname IS NOT NULL"
	rows, err := conn.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []prometheus.Metric
	values := make([]float64, len(statDatabaseColumns))
	targets := []any{new(string)}
	for i := range values {
		targets = append(targets, &values[i])
	}
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return nil, err
		}
		datname := *targets[0].(*string)
		for i, column := range statDatabaseColumns {
			kind := prometheus.CounterValue
			if column == "numbackends" {
				kind = prometheus.GaugeValue
			}
			out = append(out, prometheus.MustNewConstMetric(statDatabaseDescs[column], kind, values[i], datname))
		}
	}
	return out, rows.Err()
}

// exportedSettings are the settings exported as pg_settings_<name>, with
// postgres_exporter's unit suffix (_bytes, _seconds).
var exportedSettings = []string{"max_connections", "superuser_reserved_connections", "shared_buffers", "effective_cache_size",
	"work_mem", "maintenance_work_mem", "max_wal_size", "archive_timeout", "max_replication_slots", "max_wal_senders"}

func settingsMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	rows, err := conn.Query(ctx, `SELECT name, setting, coalesce(unit, '') FROM pg_settings WHERE name = ANY($1)`, exportedSettings)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []prometheus.Metric
	for rows.Next() {
		var name, setting, unit string
		if err := rows.Scan(&name, &setting, &unit); err != nil {
			return nil, err
		}
		value, err := strconv.ParseFloat(setting, 64)
		if err != nil {
			continue
		}
		suffix, factor := settingUnit(unit)
		desc := prometheus.NewDesc("pg_settings_"+name+suffix, "Server Parameter: "+name+".", nil, nil)
		out = append(out, prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value*factor))
	}
	return out, rows.Err()
}

// settingUnit is the name suffix and the factor that turn a pg_settings
// value of a unit into bytes or seconds, as postgres_exporter does.
func settingUnit(unit string) (suffix string, factor float64) {
	switch unit {
	case "B":
		return "_bytes", 1
	case "kB":
		return "_bytes", 1024
	case "8kB":
		return "_bytes", 8192
	case "16MB":
		return "_bytes", 16 << 20
	case "MB":
		return "_bytes", 1 << 20
	case "ms":
		return "_seconds", 0.001
	case "s":
		return "_seconds", 1
	case "min":
		return "_seconds", 60
	}
	return "", 1
}

var (
	isReplicaDesc = prometheus.NewDesc("pg_replication_is_replica",
		"1 while the server is in recovery (a replica), else 0.", nil, nil)
	replicationLagDesc = prometheus.NewDesc("pg_replication_lag_seconds",
		"Age of the last transaction a replica replayed while WAL waits to be replayed; 0 when caught up and on a primary.", nil, nil)
	standbyLagBytesDesc = prometheus.NewDesc("pg_stat_replication_pg_wal_lsn_diff",
		"Bytes of WAL a primary wrote that the standby has not replayed yet.", []string{"application_name", "state", "sync_state"}, nil)
	standbyReplayLagDesc = prometheus.NewDesc("pg_stat_replication_replay_lag_seconds",
		"The standby's replay lag as the primary measures it.", []string{"application_name", "state", "sync_state"}, nil)
)

// replicationMetrics are the replica's lag, and on a primary each
// standby's.
func replicationMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	var replica bool
	var lag float64
	err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery(),
	       CASE WHEN NOT pg_is_in_recovery() THEN 0
	            WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
	            ELSE greatest(0, coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)) END::float8`).Scan(&replica, &lag)
	if err != nil {
		return nil, err
	}
	out := []prometheus.Metric{
		prometheus.MustNewConstMetric(isReplicaDesc, prometheus.GaugeValue, boolFloat(replica)),
		prometheus.MustNewConstMetric(replicationLagDesc, prometheus.GaugeValue, lag),
	}
	if replica {
		return out, nil
	}
	rows, err := conn.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(state, ''), coalesce(sync_state, ''),
	       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::float8,
	       coalesce(extract(epoch FROM replay_lag), 0)::float8
	  FROM pg_stat_replication`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, state, syncState string
		var bytes, seconds float64
		if err := rows.Scan(&name, &state, &syncState, &bytes, &seconds); err != nil {
			return nil, err
		}
		out = append(out,
			prometheus.MustNewConstMetric(standbyLagBytesDesc, prometheus.GaugeValue, bytes, name, state, syncState),
			prometheus.MustNewConstMetric(standbyReplayLagDesc, prometheus.GaugeValue, seconds, name, state, syncState))
	}
	return out, rows.Err()
}

var (
	archivedCountDesc = prometheus.NewDesc("pg_stat_archiver_archived_count",
		"WAL segments archived since the statistics were reset.", nil, nil)
	archiveFailedCountDesc = prometheus.NewDesc("pg_stat_archiver_failed_count",
		"Failed attempts to archive a WAL segment since the statistics were reset.", nil, nil)
	archiveAgeDesc = prometheus.NewDesc("pg_stat_archiver_last_archive_age",
		"Seconds since the last WAL segment was archived; absent before the first.", nil, nil)
)

func archiverMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	var archived, failed float64
	var age *float64
	err := conn.QueryRow(ctx, `SELECT archived_count::float8, failed_count::float8, extract(epoch FROM now() - last_archived_time)::float8
	  FROM pg_stat_archiver`).Scan(&archived, &failed, &age)
	if err != nil {
		return nil, err
	}
	out := []prometheus.Metric{
		prometheus.MustNewConstMetric(archivedCountDesc, prometheus.CounterValue, archived),
		prometheus.MustNewConstMetric(archiveFailedCountDesc, prometheus.CounterValue, failed),
	}
	if age != nil {
		out = append(out, prometheus.MustNewConstMetric(archiveAgeDesc, prometheus.GaugeValue, *age))
	}
	return out, nil
}

var (
	walSegmentsDesc = prometheus.NewDesc("pg_wal_segments", "WAL segments in pg_wal.", nil, nil)
	walSizeDesc     = prometheus.NewDesc("pg_wal_size_bytes", "Bytes of WAL in pg_wal.", nil, nil)
)

func walMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	var segments, size float64
	err := conn.QueryRow(ctx, `SELECT count(*)::float8, coalesce(sum(size), 0)::float8 FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`).Scan(&segments, &size)
	if err != nil {
		return nil, err
	}
	return []prometheus.Metric{
		prometheus.MustNewConstMetric(walSegmentsDesc, prometheus.GaugeValue, segments),
		prometheus.MustNewConstMetric(walSizeDesc, prometheus.GaugeValue, size),
	}, nil
}

var (
	activityCountDesc = prometheus.NewDesc("pg_stat_activity_count",
		"Client sessions by database and state.", []string{"datname", "state"}, nil)
	activityMaxTxDesc = prometheus.NewDesc("pg_stat_activity_max_tx_duration",
		"Seconds the oldest open transaction has run, by database and state.", []string{"datname", "state"}, nil)
)

func activityMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(state, 'unknown'), count(*)::float8,
	       coalesce(max(extract(epoch FROM now() - xact_start)), 0)::float8
	  FROM pg_stat_activity WHERE datname IS NOT NULL AND backend_type = 'client backend' GROUP BY 1, 2`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []prometheus.Metric
	for rows.Next() {
		var datname, state string
		var count, maxTx float64
		if err := rows.Scan(&datname, &state, &count, &maxTx); err != nil {
			return nil, err
		}
		out = append(out,
			prometheus.MustNewConstMetric(activityCountDesc, prometheus.GaugeValue, count, datname, state),
			prometheus.MustNewConstMetric(activityMaxTxDesc, prometheus.GaugeValue, maxTx, datname, state))
	}
	return out, rows.Err()
}

var databaseSizeDesc = prometheus.NewDesc("pg_database_size_bytes", "Disk space the database uses.", []string{"datname"}, nil)

func sizeMetrics(ctx context.Context, conn *pgx.Conn) ([]prometheus.Metric, error) {
	rows, err := conn.Query(ctx, `SELECT datname, pg_database_size(oid)::float8 FROM pg_database WHERE datallowconn`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []prometheus.Metric
	for rows.Next() {
		var datname string
		var size float64
		if err := rows.Scan(&datname, &size); err != nil {
			return nil, err
		}
		out = append(out, prometheus.MustNewConstMetric(databaseSizeDesc, prometheus.GaugeValue, size, datname))
	}
	return out, rows.Err()
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
