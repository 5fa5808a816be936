// Package promsource_test checks the auto-pilot's Prometheus source against
// a real Prometheus server loaded with crafted history.
package promsource_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

// databaseSeries crafts the series of one database pod the way cAdvisor and
// the instance program expose them.
func databaseSeries(namespace, pod string, postgres bool, cpu, reads, writes float64) []promserver.Series {
	return append(foreignSeries(namespace, pod, postgres, cpu, reads, writes),
		promserver.Series{Name: promsource.InstanceUp, Labels: map[string]string{"namespace": namespace, "pod": pod}, Value: 1})
}

// foreignSeries crafts the series of a pod that looks like a database pod but
// runs no instance program: someone else's PostgreSQL or MySQL with its
// exporter.
func foreignSeries(namespace, pod string, postgres bool, cpu, reads, writes float64) []promserver.Series {
	labels := func(extra map[string]string) map[string]string {
		l := map[string]string{"namespace": namespace, "pod": pod}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	series := []promserver.Series{
		{Name: promsource.CPUSeconds, Labels: labels(map[string]string{"container": "database"}), Counter: true, Value: cpu},
		// Another container of the pod must not count.
		{Name: promsource.CPUSeconds, Labels: labels(map[string]string{"container": "exporter"}), Counter: true, Value: 0.05},
		{Name: promsource.MemoryBytes, Labels: labels(map[string]string{"container": "database"}), Value: 512 << 20},
		{Name: promsource.VolumeUsed, Labels: labels(nil), Value: 6 << 30},
		{Name: promsource.VolumeCapacity, Labels: labels(nil), Value: 10 << 30},
	}
	if postgres {
		return append(series,
			promserver.Series{Name: promsource.PostgresConnections, Labels: labels(map[string]string{"datname": "app"}), Value: 30},
			promserver.Series{Name: promsource.PostgresConnections, Labels: labels(map[string]string{"datname": "postgres"}), Value: 2},
			promserver.Series{Name: promsource.PostgresMaxConnections, Labels: labels(nil), Value: 100},
			promserver.Series{Name: promsource.PostgresReads, Labels: labels(map[string]string{"datname": "app"}), Counter: true, Value: reads},
			promserver.Series{Name: promsource.PostgresInserts, Labels: labels(map[string]string{"datname": "app"}), Counter: true, Value: writes / 2},
			promserver.Series{Name: promsource.PostgresUpdates, Labels: labels(map[string]string{"datname": "app"}), Counter: true, Value: writes / 4},
			promserver.Series{Name: promsource.PostgresDeletes, Labels: labels(map[string]string{"datname": "app"}), Counter: true, Value: writes / 4},
			promserver.Series{Name: promsource.PostgresLag, Labels: labels(nil), Value: 1.5},
		)
	}
	return append(series,
		promserver.Series{Name: promsource.MySQLConnections, Labels: labels(nil), Value: 32},
		promserver.Series{Name: promsource.MySQLMaxConnections, Labels: labels(nil), Value: 200},
		promserver.Series{Name: promsource.MySQLCommands, Labels: labels(map[string]string{"command": "select"}), Counter: true, Value: reads},
		promserver.Series{Name: promsource.MySQLCommands, Labels: labels(map[string]string{"command": "insert"}), Counter: true, Value: writes},
		promserver.Series{Name: promsource.MySQLCommands, Labels: labels(map[string]string{"command": "show_status"}), Counter: true, Value: 1000},
		promserver.Series{Name: promsource.MySQLLag, Labels: labels(nil), Value: 0},
	)
}

func startPrometheus(t *testing.T, series []promserver.Series, end time.Time) *promserver.Server {
	t.Helper()
	history := promserver.OpenMetrics(series, end.Add(-15*time.Minute), end, 15*time.Second)
	server, err := promserver.Start(context.Background(), promserver.Config{OpenMetrics: history})
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	return server
}

// countingProxy serves the Prometheus at target through a reverse proxy
// that counts the queries it forwards: what a cycle really costs the server.
func countingProxy(t *testing.T, target string) (url string, queries func() int64) {
	t.Helper()
	u, err := neturl.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(u)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/query") {
			n.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	return server.URL, n.Load
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-6+0.01*math.Abs(want) }

// TestSnapshotReadsEverySignal loads a PostgreSQL and a MySQL-family database
// and checks every signal of every pod, that the batch is 8 queries, and
// that pods without the instance program are left out.
func TestSnapshotReadsEverySignal(t *testing.T) {
	end := time.Now().Truncate(time.Second)
	var series []promserver.Series
	series = append(series, databaseSeries("shop", "orders-0", true, 0.8, 300, 120)...)
	series = append(series, databaseSeries("shop", "orders-1", true, 0.4, 200, 0)...)
	series = append(series, databaseSeries("billing", "ledger-0", false, 1.2, 50, 40)...)
	series = append(series, foreignSeries("shop", "legacy-pg-0", true, 0.9, 500, 100)...)
	series = append(series, foreignSeries("billing", "legacy-mysql-0", false, 0.9, 500, 100)...)
	server := startPrometheus(t, series, end)
	url, queries := countingProxy(t, server.URL)

	source, err := promsource.New(promsource.Options{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Snapshot(context.Background(), end)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if n := queries(); n != 8 {
		t.Errorf("a cycle sent %d queries, want 8", n)
	}
	if len(snap.Pods) != 3 {
		t.Fatalf("got %d pods, want 3: %+v", len(snap.Pods), snap.Pods)
	}
	want := map[promsource.PodKey]promsource.PodMetrics{
		{Namespace: "shop", Pod: "orders-0"}:    {CPUCores: 0.8, MemoryBytes: 512 << 20, Connections: 32, MaxConnections: 100, ReadRate: 300, WriteRate: 120, LagSeconds: 1.5, VolumeUsedShare: 0.6},
		{Namespace: "shop", Pod: "orders-1"}:    {CPUCores: 0.4, MemoryBytes: 512 << 20, Connections: 32, MaxConnections: 100, ReadRate: 200, WriteRate: 0, LagSeconds: 1.5, VolumeUsedShare: 0.6},
		{Namespace: "billing", Pod: "ledger-0"}: {CPUCores: 1.2, MemoryBytes: 512 << 20, Connections: 32, MaxConnections: 200, ReadRate: 50, WriteRate: 40, LagSeconds: 0, VolumeUsedShare: 0.6},
	}
	for key, w := range want {
		got, ok := snap.Pods[key]
		if !ok {
			t.Errorf("%v missing", key)
			continue
		}
		for _, field := range []struct {
			name      string
			got, want float64
		}{
			{"cpu", got.CPUCores, w.CPUCores}, {"memory", got.MemoryBytes, w.MemoryBytes},
			{"connections", got.Connections, w.Connections}, {"maxConnections", got.MaxConnections, w.MaxConnections},
			{"reads", got.ReadRate, w.ReadRate}, {"writes", got.WriteRate, w.WriteRate},
			{"lag", got.LagSeconds, w.LagSeconds}, {"volume", got.VolumeUsedShare, w.VolumeUsedShare},
		} {
			if !near(field.got, field.want) {
				t.Errorf("%v %s = %g, want %g", key, field.name, field.got, field.want)
			}
		}
	}
}

// TestSnapshotIsAFixedBatch loads 60 database pods and checks one cycle
// still sends 8 queries, and that pods whose scraping stopped drop out.
func TestSnapshotIsAFixedBatch(t *testing.T) {
	end := time.Now().Truncate(time.Second)
	var series []promserver.Series
	for i := range 60 {
		series = append(series, databaseSeries(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("db-%d-0", i), i%2 == 0, 0.5, 10, 10)...)
	}
	server := startPrometheus(t, series, end)
	url, queries := countingProxy(t, server.URL)
	source, err := promsource.New(promsource.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Snapshot(context.Background(), end)
	if err != nil {
		t.Fatal(err)
	}
	if n := queries(); n != 8 || len(snap.Pods) != 60 {
		t.Errorf("%d queries for %d pods, want 8 queries for 60 pods", n, len(snap.Pods))
	}
	// Ten minutes after the history ends, every rate is gone: no pod is
	// reported, so the auto-pilot sees missing metrics and holds.
	later, err := source.Snapshot(context.Background(), end.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(later.Pods) != 0 {
		t.Errorf("stale pods reported: %d", len(later.Pods))
	}
}

// TestSnapshotFailsWhenPrometheusIsDown checks an unreachable Prometheus is
// an error, not an empty snapshot.
func TestSnapshotFailsWhenPrometheusIsDown(t *testing.T) {
	server := startPrometheus(t, databaseSeries("a", "b-0", true, 1, 1, 1), time.Now())
	source, err := promsource.New(promsource.Options{URL: server.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Snapshot(context.Background(), time.Now()); err == nil {
		t.Error("no error from a stopped Prometheus")
	}
}
