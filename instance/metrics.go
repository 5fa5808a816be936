package instance

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// MetricsReporter is an engine that reads its own statistics as Prometheus
// series, under the names of its family's standard exporter
// (postgres_exporter, mysqld_exporter), so dashboards written for those
// exporters work unchanged.
type MetricsReporter interface {
	// MetricsNamespace is the exporter's prefix ("pg", "mysql"); its
	// <namespace>_up series says whether the engine answered.
	MetricsNamespace() string
	// Metrics reads the engine's statistics.
	Metrics(ctx context.Context) ([]prometheus.Metric, error)
}

// metricsTimeout bounds one scrape's queries, below Prometheus' default
// scrape timeout (10 s).
const metricsTimeout = 5 * time.Second

var errEngineStopped = errors.New("the engine is not running")

// The instance program's own series, the same for every engine.
var (
	isPrimaryDesc = prometheus.NewDesc("dbpilot_instance_is_primary",
		"1 while the instance runs as its Database's primary (it takes writes), 0 while it is a replica.", nil, nil)
	streamingDesc = prometheus.NewDesc("dbpilot_instance_replica_streaming",
		"1 while a replica receives its primary's changes, 0 while it does not; absent on a primary.", nil, nil)
	fencedDesc = prometheus.NewDesc("dbpilot_instance_fenced",
		"1 while the instance is fenced (its engine stopped for investigation), else 0.", nil, nil)
	credentialsDesc = prometheus.NewDesc("dbpilot_instance_credentials_applied",
		"1 once the engine's users match the credentials Secret since the engine started, else 0.", nil, nil)
	archivedDesc = prometheus.NewDesc("dbpilot_instance_archive_last_archived_timestamp_seconds",
		"When the primary last archived a WAL segment (binary log) into the backup destination, in seconds since the epoch; absent before the first.", nil, nil)
	archiveFailedDesc = prometheus.NewDesc("dbpilot_instance_archive_last_failed_timestamp_seconds",
		"When archiving a WAL segment (binary log) last failed, in seconds since the epoch; absent when it never did.", nil, nil)
	archiveFailuresDesc = prometheus.NewDesc("dbpilot_instance_archive_failures_total",
		"Failed archiving attempts since the engine started.", nil, nil)
	volumeUsedDesc = prometheus.NewDesc("dbpilot_instance_data_volume_used_bytes",
		"Bytes used on the data volume, as the filesystem reports them.", nil, nil)
	volumeCapacityDesc = prometheus.NewDesc("dbpilot_instance_data_volume_capacity_bytes",
		"Size of the data volume's filesystem in bytes.", nil, nil)
	volumeAvailableDesc = prometheus.NewDesc("dbpilot_instance_data_volume_available_bytes",
		"Bytes on the data volume the engine may still write.", nil, nil)
)

// metricsCollector gathers one scrape: the engine's own series, its up
// series, the instance's role and archiving, and the data volume's usage.
// Its series have no namespace, database or role label: Prometheus adds
// them from the pod's labels (config/prometheus), so a role change is
// seen at the next scrape without a restart of anything.
type metricsCollector struct {
	probes  *probeServer
	dataDir string
}

// Describe sends nothing: the engines' series depend on what the engine
// reports (its databases, its status variables), so the collector is
// unchecked.
func (c *metricsCollector) Describe(chan<- *prometheus.Desc) {}

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	gauge := func(desc *prometheus.Desc, value float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value)
	}
	fenced := isFenced(c.probes.membership.StateDir)
	gauge(fencedDesc, boolValue(fenced))
	gauge(credentialsDesc, boolValue(c.probes.usersApplied.Load()))
	c.collectVolume(gauge)
	if reporter, ok := c.probes.engine.(MetricsReporter); ok {
		up := prometheus.NewDesc(reporter.MetricsNamespace()+"_up", "1 when the engine answered this scrape's queries, else 0.", nil, nil)
		var metrics []prometheus.Metric
		err := errEngineStopped
		if c.probes.engineRunning.Load() {
			metrics, err = reporter.Metrics(ctx)
		}
		if err != nil {
			gauge(up, 0)
		} else {
			gauge(up, 1)
			for _, m := range metrics {
				ch <- m
			}
		}
	}
	reporter, ok := c.probes.engine.(StatusReporter)
	if !ok || !c.probes.engineRunning.Load() {
		return
	}
	status, err := reporter.Status(ctx)
	if err != nil {
		return
	}
	gauge(isPrimaryDesc, boolValue(status.Role == layout.RolePrimary))
	if status.Role == layout.RoleReplica {
		gauge(streamingDesc, boolValue(status.Replicating))
	}
	if a := status.Archive; a != nil {
		if a.LastArchivedTime != nil {
			gauge(archivedDesc, float64(a.LastArchivedTime.Unix()))
		}
		if a.LastFailedTime != nil {
			gauge(archiveFailedDesc, float64(a.LastFailedTime.Unix()))
		}
		ch <- prometheus.MustNewConstMetric(archiveFailuresDesc, prometheus.CounterValue, float64(a.FailedCount))
	}
}

// collectVolume reports the data volume's filesystem, which the kubelet
// reports too only for some volume types.
func (c *metricsCollector) collectVolume(gauge func(*prometheus.Desc, float64)) {
	if c.dataDir == "" {
		return
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(c.dataDir, &fs); err != nil {
		return
	}
	block := float64(fs.Bsize)
	gauge(volumeCapacityDesc, float64(fs.Blocks)*block)
	gauge(volumeUsedDesc, float64(fs.Blocks-fs.Bfree)*block)
	gauge(volumeAvailableDesc, float64(fs.Bavail)*block)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
