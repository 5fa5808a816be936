package promsource

import (
	"context"
	"fmt"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// PodKey names a pod.
type PodKey struct {
	Namespace, Pod string
}

// PodMetrics are one pod's signals at one time. Volume is the used share of
// the pod's data volume.
type PodMetrics struct {
	CPUCores, MemoryBytes       float64
	Connections, MaxConnections float64
	ReadRate, WriteRate         float64
	LagSeconds                  float64
	VolumeUsedShare             float64
}

// Snapshot is one cycle's metrics of every database pod Prometheus knows.
type Snapshot struct {
	Time time.Time
	Pods map[PodKey]PodMetrics
}

// Source queries one Prometheus server.
type Source struct {
	api     promv1.API
	timeout time.Duration
	queries []query
}

// Options configure the Prometheus client; they come from operator flags,
// never from a Database (a namespace user must not point the operator at
// arbitrary URLs).
type Options struct {
	URL             string
	BearerTokenFile string
	CAFile          string
	Timeout         time.Duration
	// RateWindow is the window of rates; DefaultRateWindow when zero. It
	// must hold at least two scrapes.
	RateWindow time.Duration
}

// New returns a Source for the Prometheus at opts.URL.
func New(opts Options) (*Source, error) {
	rt, err := roundTripper(opts)
	if err != nil {
		return nil, err
	}
	client, err := promapi.NewClient(promapi.Config{Address: opts.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("creating Prometheus client for %s: %w", opts.URL, err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	window := opts.RateWindow
	if window <= 0 {
		window = DefaultRateWindow
	}
	return &Source{api: promv1.NewAPI(client), timeout: timeout, queries: queries(window)}, nil
}

// Snapshot runs the batch queries at time at and merges them per pod. A pod
// is in the snapshot only when its CPU rate is, so every pod in it has a
// fresh CPU reading.
func (s *Source) Snapshot(ctx context.Context, at time.Time) (Snapshot, error) {
	snap := Snapshot{Time: at, Pods: map[PodKey]PodMetrics{}}
	perQuery := map[string]model.Vector{}
	for _, q := range s.queries {
		qctx, cancel := context.WithTimeout(ctx, s.timeout)
		value, _, err := s.api.Query(qctx, q.promQL, at)
		cancel()
		if err != nil {
			return Snapshot{}, fmt.Errorf("querying %s: %w", q.name, err)
		}
		vector, ok := value.(model.Vector)
		if !ok {
			return Snapshot{}, fmt.Errorf("querying %s: got %s, want a vector", q.name, value.Type())
		}
		perQuery[q.name] = vector
	}
	for _, sample := range perQuery["cpu"] {
		snap.Pods[podKey(sample.Metric)] = PodMetrics{CPUCores: float64(sample.Value)}
	}
	set := func(name string, apply func(*PodMetrics, float64)) {
		for _, sample := range perQuery[name] {
			key := podKey(sample.Metric)
			if m, ok := snap.Pods[key]; ok {
				apply(&m, float64(sample.Value))
				snap.Pods[key] = m
			}
		}
	}
	set("memory", func(m *PodMetrics, v float64) { m.MemoryBytes = v })
	set("connections", func(m *PodMetrics, v float64) { m.Connections = v })
	set("maxConnections", func(m *PodMetrics, v float64) { m.MaxConnections = v })
	set("reads", func(m *PodMetrics, v float64) { m.ReadRate = v })
	set("writes", func(m *PodMetrics, v float64) { m.WriteRate = v })
	set("lag", func(m *PodMetrics, v float64) { m.LagSeconds = v })
	set("volume", func(m *PodMetrics, v float64) { m.VolumeUsedShare = v })
	return snap, nil
}

func podKey(metric model.Metric) PodKey {
	return PodKey{Namespace: string(metric["namespace"]), Pod: string(metric["pod"])}
}
