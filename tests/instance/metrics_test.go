package instance_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dbpilot/dbpilot/autopilot/promsource"
)

// metricsEndpoint is where an instance serves its engine metrics, and the
// token it asks for.
type metricsEndpoint struct {
	port  int
	token string
}

// metricsArgs are the flags that make an instance serve its metrics with
// a token file of its own under dir.
func metricsArgs(t testing.TB, u osUser, dir string) ([]string, metricsEndpoint) {
	t.Helper()
	m := metricsEndpoint{port: freePort(t), token: "scrape-" + filepath.Base(dir)}
	tokenFile := filepath.Join(dir, "metrics-token")
	u.writeFile(t, tokenFile, m.token+"\n")
	return []string{"--metrics-address=127.0.0.1:" + strconv.Itoa(m.port), "--metrics-token-file=" + tokenFile}, m
}

// scrape reads the metrics with a token (the endpoint's own, another, or
// none); the families are nil unless the answer is 200.
func (m metricsEndpoint) scrape(t testing.TB, token string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	// The certificate is self-signed: Prometheus scrapes it the same way.
	client := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as in the pods
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", m.port), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scraping the metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, body)
	}
	return resp.StatusCode, families
}

// value is the value of the series of a name whose labels include want;
// ok is false when there is none.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	family := families[name]
	if family == nil {
		return 0, false
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// checkMetricsRefused: no token, or a wrong one, reads nothing.
func checkMetricsRefused(t testing.TB, m metricsEndpoint) {
	t.Helper()
	for _, token := range []string{"", "not-" + m.token} {
		if code, _ := m.scrape(t, token); code != http.StatusUnauthorized {
			t.Errorf("a scrape with token %q got %d, want 401", token, code)
		}
	}
}

// expectSeries checks that each name has a series matching its labels,
// and returns the values.
func expectSeries(t testing.TB, who string, families map[string]*dto.MetricFamily, names map[string]map[string]string) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	for name, labels := range names {
		v, ok := value(families, name, labels)
		if !ok {
			t.Errorf("the %s exports no %s%v; it has %v", who, name, labels, families[name].GetMetric())
		}
		values[name] = v
	}
	return values
}

// checkPostgresMetrics: the primary and the replica export the series the
// auto-pilot reads (promsource), under postgres_exporter's names, with
// values that follow what the test did: the writes it made, its session,
// the role of each.
func checkPostgresMetrics(t testing.TB, primary, replica metricsEndpoint, insertedRows int) {
	t.Helper()
	checkMetricsRefused(t, primary)
	_, families := primary.scrape(t, primary.token)
	shop := map[string]string{"datname": "shop"}
	got := expectSeries(t, "primary", families, map[string]map[string]string{
		promsource.PostgresUp:                 nil,
		promsource.PostgresConnections:        shop,
		promsource.PostgresMaxConnections:     nil,
		promsource.PostgresReads:              shop,
		promsource.PostgresInserts:            shop,
		promsource.PostgresUpdates:            shop,
		promsource.PostgresDeletes:            shop,
		promsource.PostgresLag:                nil,
		"pg_replication_is_replica":           nil,
		"pg_stat_replication_pg_wal_lsn_diff": {"application_name": "db_1", "state": "streaming"},
		promsource.PostgresWALBytes:           nil,
		"pg_database_size_bytes":              shop,
		"pg_settings_shared_buffers_bytes":    nil,
		promsource.InstanceUp:                 nil,
		promsource.VolumeUsed:                 nil,
		promsource.VolumeCapacity:             nil,
		promsource.VolumeAvailable:            nil,
	})
	if got[promsource.PostgresUp] != 1 || got[promsource.InstanceUp] != 1 || got["pg_replication_is_replica"] != 0 {
		t.Errorf("the primary reports pg_up %v, is_primary %v, is_replica %v", got[promsource.PostgresUp], got[promsource.InstanceUp], got["pg_replication_is_replica"])
	}
	if got[promsource.PostgresInserts] < float64(insertedRows) {
		t.Errorf("the primary counts %v rows inserted into shop, the test inserted %d", got[promsource.PostgresInserts], insertedRows)
	}
	if got[promsource.PostgresConnections] < 1 {
		t.Errorf("the primary counts %v sessions on shop while the test holds one", got[promsource.PostgresConnections])
	}
	if got[promsource.PostgresMaxConnections] < 10 || got["pg_settings_shared_buffers_bytes"] != 32<<20 {
		t.Errorf("settings: max_connections %v, shared_buffers %v bytes (the configuration says 32MB)",
			got[promsource.PostgresMaxConnections], got["pg_settings_shared_buffers_bytes"])
	}
	if used, capacity := got[promsource.VolumeUsed], got[promsource.VolumeCapacity]; used <= 0 || used > capacity {
		t.Errorf("data volume: %v bytes used of %v", used, capacity)
	}

	_, families = replica.scrape(t, replica.token)
	got = expectSeries(t, "replica", families, map[string]map[string]string{
		promsource.PostgresUp:       nil,
		promsource.PostgresLag:      nil,
		"pg_replication_is_replica": nil,
		promsource.InstanceUp:       nil,
		promsource.ReplicaStreaming: nil,
	})
	if got["pg_replication_is_replica"] != 1 || got[promsource.InstanceUp] != 0 || got[promsource.ReplicaStreaming] != 1 {
		t.Errorf("the replica reports is_replica %v, is_primary %v, streaming %v",
			got["pg_replication_is_replica"], got[promsource.InstanceUp], got[promsource.ReplicaStreaming])
	}
}

// checkMariaDBMetrics is checkPostgresMetrics under mysqld_exporter's
// names.
func checkMariaDBMetrics(t testing.TB, primary, replica metricsEndpoint, inserts int) {
	t.Helper()
	checkMetricsRefused(t, primary)
	_, families := primary.scrape(t, primary.token)
	got := expectSeries(t, "primary", families, map[string]map[string]string{
		promsource.MySQLUp:                               nil,
		promsource.MySQLConnections:                      nil,
		promsource.MySQLMaxConnections:                   nil,
		promsource.MySQLCommands:                         {"command": "insert_select"},
		"mysql_global_variables_innodb_buffer_pool_size": nil,
		promsource.InstanceUp:                            nil,
		promsource.VolumeUsed:                            nil,
		promsource.VolumeCapacity:                        nil,
		promsource.VolumeAvailable:                       nil,
	})
	if got[promsource.MySQLUp] != 1 || got[promsource.InstanceUp] != 1 {
		t.Errorf("the primary reports mysql_up %v, is_primary %v", got[promsource.MySQLUp], got[promsource.InstanceUp])
	}
	if got[promsource.MySQLCommands] < float64(inserts) {
		t.Errorf("the primary counts %v INSERT … SELECT statements, the test ran %d", got[promsource.MySQLCommands], inserts)
	}
	if got[promsource.MySQLConnections] < 1 || got[promsource.MySQLMaxConnections] < 10 {
		t.Errorf("connections %v of %v", got[promsource.MySQLConnections], got[promsource.MySQLMaxConnections])
	}
	if _, ok := value(families, promsource.MySQLLag, nil); ok {
		t.Errorf("the primary exports a replica's %s", promsource.MySQLLag)
	}

	_, families = replica.scrape(t, replica.token)
	got = expectSeries(t, "replica", families, map[string]map[string]string{
		promsource.MySQLUp:                     nil,
		promsource.MySQLLag:                    nil,
		"mysql_slave_status_slave_io_running":  nil,
		"mysql_slave_status_slave_sql_running": nil,
		promsource.InstanceUp:                  nil,
		promsource.ReplicaStreaming:            nil,
	})
	if got["mysql_slave_status_slave_io_running"] != 1 || got[promsource.InstanceUp] != 0 || got[promsource.ReplicaStreaming] != 1 {
		t.Errorf("the replica reports io_running %v, is_primary %v, streaming %v",
			got["mysql_slave_status_slave_io_running"], got[promsource.InstanceUp], got[promsource.ReplicaStreaming])
	}
}
