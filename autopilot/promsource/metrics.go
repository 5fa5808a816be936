// Package promsource reads the auto-pilot's signals from Prometheus with a
// fixed set of batch queries per cycle, whatever the number of Databases:
// each query aggregates by (namespace, pod) over dbpilot's database pods
// only, and the caller maps pods back to Databases by the operator's own pod
// labels.
package promsource

import (
	"time"

	"github.com/prometheus/common/model"
)

// The series the auto-pilot reads, in one place. The kubelet's cAdvisor
// names the first two; the rest are served by the instance program in every
// database pod, the engine's under postgres_exporter's and mysqld_exporter's
// names, and the scrape configuration (config/prometheus) adds the namespace
// and pod labels.
const (
	// DatabaseContainer is the container the CPU and memory series are for.
	DatabaseContainer = "database"

	CPUSeconds  = "container_cpu_usage_seconds_total"
	MemoryBytes = "container_memory_working_set_bytes"

	// InstanceUp is a series only the instance program serves, one per
	// pod: every query keeps only the pods that have it, so another
	// PostgreSQL or MySQL in the cluster, or another workload's container
	// named "database", never counts.
	InstanceUp = "dbpilot_instance_is_primary"
	// The data volume as the instance program sees it: the kubelet's volume
	// stats exist only for volume plugins that report them, which local
	// volumes do not.
	VolumeUsed     = "dbpilot_instance_data_volume_used_bytes"
	VolumeCapacity = "dbpilot_instance_data_volume_capacity_bytes"

	PostgresConnections    = "pg_stat_database_numbackends"
	PostgresMaxConnections = "pg_settings_max_connections"
	PostgresReads          = "pg_stat_database_tup_fetched"
	PostgresInserts        = "pg_stat_database_tup_inserted"
	PostgresUpdates        = "pg_stat_database_tup_updated"
	PostgresDeletes        = "pg_stat_database_tup_deleted"
	PostgresLag            = "pg_replication_lag_seconds"

	// PostgresAppDatabases selects the databases of pg_stat_database that
	// hold the application's data: not postgres, where the instance
	// program's own status and metrics queries run, nor the templates.
	PostgresAppDatabases = `datname!~"postgres|template0|template1"`

	MySQLConnections    = "mysql_global_status_threads_connected"
	MySQLMaxConnections = "mysql_global_variables_max_connections"
	MySQLCommands       = "mysql_global_status_commands_total"
	MySQLLag            = "mysql_slave_status_seconds_behind_master"
	// MySQLWriteCommands are the commands (Com_ status variables) that
	// write: INSERT … SELECT, multi-table UPDATE and DELETE count apart
	// from the plain statements.
	MySQLWriteCommands = "insert|insert_select|update|update_multi|delete|delete_multi|replace|replace_select"
)

// The series the alerts (config/prometheus) and the dashboards
// (config/grafana) read besides the auto-pilot's: the kubelet's cAdvisor
// names the container limits, the instance program serves the rest.
const (
	CPUQuota    = "container_spec_cpu_quota"
	CPUPeriod   = "container_spec_cpu_period"
	MemoryLimit = "container_spec_memory_limit_bytes"

	PostgresUp = "pg_up"
	MySQLUp    = "mysql_up"
	// PostgresWALBytes is the size of pg_wal.
	PostgresWALBytes = "pg_wal_size_bytes"
	// ReplicaStreaming is 1 while a replica receives from its primary.
	ReplicaStreaming = "dbpilot_instance_replica_streaming"
	VolumeAvailable  = "dbpilot_instance_data_volume_available_bytes"
	// A primary's WAL (PostgreSQL) or binary log (MariaDB, MySQL)
	// archiving, where the Database has a backup destination.
	ArchiveLastArchived = "dbpilot_instance_archive_last_archived_timestamp_seconds"
	ArchiveLastFailed   = "dbpilot_instance_archive_last_failed_timestamp_seconds"
)

// Series are the names of every series above: what the auto-pilot, the
// alerts and the dashboards read from the kubelet and the database pods
// (tests/prometheus holds the alerts and dashboards to them).
var Series = []string{
	CPUSeconds, MemoryBytes, CPUQuota, CPUPeriod, MemoryLimit,
	InstanceUp, VolumeUsed, VolumeCapacity, VolumeAvailable, ReplicaStreaming, ArchiveLastArchived, ArchiveLastFailed,
	PostgresUp, PostgresConnections, PostgresMaxConnections, PostgresReads, PostgresInserts, PostgresUpdates, PostgresDeletes, PostgresLag, PostgresWALBytes,
	MySQLUp, MySQLConnections, MySQLMaxConnections, MySQLCommands, MySQLLag,
}

// DefaultRateWindow is the window of every rate: long enough to hold
// several scrapes, short enough to follow the load.
const DefaultRateWindow = 2 * time.Minute

// query is one batch query and what its value means for a pod.
type query struct {
	name   string
	promQL string
}

// queries are the batch queries of one cycle: eight, whatever the number of
// Databases. A pod appears in a cycle's sample only when its CPU rate does,
// so a pod that stopped being scraped drops out and the sample is partial.
func queries(window time.Duration) []query {
	rateWindow := model.Duration(window).String()
	rate := func(series string) string { return `rate(` + series + `[` + rateWindow + `])` }
	appDatabases := func(name string) string { return name + `{` + PostgresAppDatabases + `}` }
	return []query{
		{name: "cpu", promQL: perInstance(`sum by (namespace, pod) (` + rate(CPUSeconds+`{container="`+DatabaseContainer+`"}`) + `)`)},
		{name: "memory", promQL: perInstance(`sum by (namespace, pod) (` + MemoryBytes + `{container="` + DatabaseContainer + `"})`)},
		{name: "connections", promQL: perInstance(`sum by (namespace, pod) (` + PostgresConnections + `) or sum by (namespace, pod) (` + MySQLConnections + `)`)},
		{name: "maxConnections", promQL: perInstance(`max by (namespace, pod) (` + PostgresMaxConnections + `) or max by (namespace, pod) (` + MySQLMaxConnections + `)`)},
		{name: "reads", promQL: perInstance(`sum by (namespace, pod) (` + rate(appDatabases(PostgresReads)) + `) or sum by (namespace, pod) (` + rate(MySQLCommands+`{command="select"}`) + `)`)},
		{name: "writes", promQL: perInstance(`sum by (namespace, pod) (` + rate(appDatabases(PostgresInserts)) + ` + ` + rate(appDatabases(PostgresUpdates)) + ` + ` + rate(appDatabases(PostgresDeletes)) + `) or sum by (namespace, pod) (` + rate(MySQLCommands+`{command=~"`+MySQLWriteCommands+`"}`) + `)`)},
		{name: "lag", promQL: perInstance(`max by (namespace, pod) (` + PostgresLag + `) or max by (namespace, pod) (` + MySQLLag + `)`)},
		{name: "volume", promQL: perInstance(`max by (namespace, pod) (` + VolumeUsed + ` / ` + VolumeCapacity + `)`)},
	}
}

// perInstance keeps the (namespace, pod) series of expr whose pod runs the
// instance program.
func perInstance(expr string) string {
	return `(` + expr + `) and on (namespace, pod) ` + InstanceUp
}
