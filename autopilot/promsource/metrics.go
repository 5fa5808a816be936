// Package promsource reads the auto-pilot's signals from Prometheus with a
// fixed set of batch queries per cycle, whatever the number of Databases:
// each query aggregates by (namespace, pod) over every database pod, and the
// caller maps pods back to Databases by the operator's own pod labels.
package promsource

import (
	"time"

	"github.com/prometheus/common/model"
)

// The series the auto-pilot reads, in one place. The kubelet's cAdvisor and
// volume stats name the first; the engine series are served by the instance
// program in every database pod under postgres_exporter's and
// mysqld_exporter's names, and the scrape configuration (config/prometheus)
// adds the namespace and pod labels.
const (
	// DatabaseContainer is the container the CPU and memory series are for.
	DatabaseContainer = "database"

	CPUSeconds     = "container_cpu_usage_seconds_total"
	MemoryBytes    = "container_memory_working_set_bytes"
	VolumeUsed     = "kubelet_volume_stats_used_bytes"
	VolumeCapacity = "kubelet_volume_stats_capacity_bytes"

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

// DefaultRateWindow is the window of every rate: long enough to hold
// several scrapes, short enough to follow the load.
const DefaultRateWindow = 2 * time.Minute

// query is one batch query and what its value means for a pod.
type query struct {
	name   string
	promQL string
	// byClaim is set for the volume query, whose series are per
	// PersistentVolumeClaim rather than per pod.
	byClaim bool
}

// queries are the batch queries of one cycle: eight, whatever the number of
// Databases. A pod appears in a cycle's sample only when its CPU rate does,
// so a pod that stopped being scraped drops out and the sample is partial.
func queries(window time.Duration) []query {
	rateWindow := model.Duration(window).String()
	return []query{
		{name: "cpu", promQL: `sum by (namespace, pod) (rate(` + CPUSeconds + `{container="` + DatabaseContainer + `"}[` + rateWindow + `]))`},
		{name: "memory", promQL: `sum by (namespace, pod) (` + MemoryBytes + `{container="` + DatabaseContainer + `"})`},
		{name: "connections", promQL: `sum by (namespace, pod) (` + PostgresConnections + `) or sum by (namespace, pod) (` + MySQLConnections + `)`},
		{name: "maxConnections", promQL: `max by (namespace, pod) (` + PostgresMaxConnections + `) or max by (namespace, pod) (` + MySQLMaxConnections + `)`},
		{name: "reads", promQL: `sum by (namespace, pod) (rate(` + PostgresReads + `{` + PostgresAppDatabases + `}[` + rateWindow + `])) or sum by (namespace, pod) (rate(` + MySQLCommands + `{command="select"}[` + rateWindow + `]))`},
		{name: "writes", promQL: `sum by (namespace, pod) (rate(` + PostgresInserts + `{` + PostgresAppDatabases + `}[` + rateWindow + `]) + rate(` + PostgresUpdates + `{` + PostgresAppDatabases + `}[` + rateWindow + `]) + rate(` + PostgresDeletes + `{` + PostgresAppDatabases + `}[` + rateWindow + `])) or sum by (namespace, pod) (rate(` + MySQLCommands + `{command=~"` + MySQLWriteCommands + `"}[` + rateWindow + `]))`},
		{name: "lag", promQL: `max by (namespace, pod) (` + PostgresLag + `) or max by (namespace, pod) (` + MySQLLag + `)`},
		{name: "volume", promQL: `max by (namespace, persistentvolumeclaim) (` + VolumeUsed + ` / ` + VolumeCapacity + `)`, byClaim: true},
	}
}
