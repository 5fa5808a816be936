// Package loadexporter is a synthetic metrics exporter for tests and the
// auto-pilot demo: it turns a demand (reads and writes, in capacity units)
// into the series a database pod's kubelet and instance program would show
// under that load, for the pods a Database runs now. Its world is its own
// code, not the auto-pilot's model, so the auto-pilot is judged by what it
// can infer from the series. A real Prometheus scrapes it.
package loadexporter

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
)

// replayCost is what replaying a write costs a replica, as a share of what
// executing it costs the primary, in this world.
const replayCost = 0.3

// Pod is one ready pod of the Database, as the cluster has it now.
type Pod struct {
	Namespace, Name string
	Primary         bool
	Tier            dbpilotv1alpha1.Tier
}

// PodLister returns the Database's ready pods.
type PodLister func(ctx context.Context) ([]Pod, error)

// Exporter serves /metrics on 127.0.0.1.
type Exporter struct {
	// Addr is host:port of the exporter.
	Addr string

	pods     PodLister
	server   *http.Server
	mu       sync.Mutex
	demand   autopilot.Load
	last     time.Time
	counters map[string]*counters
}

type counters struct {
	cpu, reads, inserts, updates, deletes float64
}

// Start serves the exporter until Stop.
func Start(pods PodLister) (*Exporter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Exporter{Addr: l.Addr().String(), pods: pods, counters: map[string]*counters{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", e.serve)
	e.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = e.server.Serve(l) }()
	return e, nil
}

// Stop shuts the server down.
func (e *Exporter) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.server.Shutdown(ctx)
}

// SetDemand changes the load from now on.
func (e *Exporter) SetDemand(load autopilot.Load) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.demand = load
}

// Demand is the current load.
func (e *Exporter) Demand() autopilot.Load {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.demand
}

func (e *Exporter) serve(w http.ResponseWriter, r *http.Request) {
	pods, err := e.pods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	dt := 0.0
	if !e.last.IsZero() {
		dt = now.Sub(e.last).Seconds()
	}
	e.last = now
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })

	var out strings.Builder
	for _, name := range []string{promsource.CPUSeconds, promsource.PostgresReads, promsource.PostgresInserts, promsource.PostgresUpdates, promsource.PostgresDeletes} {
		fmt.Fprintf(&out, "# TYPE %s counter\n", name)
	}
	n := float64(max(1, len(pods)))
	for _, pod := range pods {
		size, _ := pod.Tier.Size()
		// Every pod serves an even share of the reads; the primary
		// executes the writes, each replica replays them at a fraction of
		// their cost.
		reads := e.demand.Read / n
		writes, work := 0.0, replayCost*e.demand.Write+reads
		if pod.Primary {
			writes = e.demand.Write
			work = writes + reads
		}
		u := work / float64(size.Capacity)
		cores := math.Min(1, u) * size.CPU.AsApproximateFloat64()
		c := e.counters[pod.Namespace+"/"+pod.Name]
		if c == nil {
			c = &counters{}
			e.counters[pod.Namespace+"/"+pod.Name] = c
		}
		// 100 operations per second per capacity unit.
		c.cpu += cores * dt
		c.reads += 100 * reads * dt
		c.inserts += 50 * writes * dt
		c.updates += 30 * writes * dt
		c.deletes += 20 * writes * dt
		labels := fmt.Sprintf(`namespace=%q,pod=%q`, pod.Namespace, pod.Name)
		fmt.Fprintf(&out, "%s{%s,container=%q} %g\n", promsource.CPUSeconds, labels, promsource.DatabaseContainer, c.cpu)
		fmt.Fprintf(&out, "%s{%s,container=%q} %g\n", promsource.MemoryBytes, labels, promsource.DatabaseContainer, size.Memory.AsApproximateFloat64()*0.5)
		fmt.Fprintf(&out, "%s{%s,datname=\"app\"} %g\n", promsource.PostgresConnections, labels, math.Round(20*u*float64(size.Capacity)))
		fmt.Fprintf(&out, "%s{%s} %d\n", promsource.PostgresMaxConnections, labels, size.MaxConnections)
		fmt.Fprintf(&out, "%s{%s,datname=\"app\"} %g\n", promsource.PostgresReads, labels, c.reads)
		fmt.Fprintf(&out, "%s{%s,datname=\"app\"} %g\n", promsource.PostgresInserts, labels, c.inserts)
		fmt.Fprintf(&out, "%s{%s,datname=\"app\"} %g\n", promsource.PostgresUpdates, labels, c.updates)
		fmt.Fprintf(&out, "%s{%s,datname=\"app\"} %g\n", promsource.PostgresDeletes, labels, c.deletes)
		fmt.Fprintf(&out, "%s{%s} 0\n", promsource.PostgresLag, labels)
		fmt.Fprintf(&out, "%s{%s} %d\n", promsource.VolumeUsed, labels, 2<<30)
		fmt.Fprintf(&out, "%s{%s} %d\n", promsource.VolumeCapacity, labels, 10<<30)
		fmt.Fprintf(&out, "%s{%s} %d\n", promsource.InstanceUp, labels, map[bool]int{false: 0, true: 1}[pod.Primary])
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(out.String()))
}
