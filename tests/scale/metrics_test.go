package scale_test

import (
	"fmt"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reconcileHistogram is the name of the operator's reconcile duration
// histogram.
const reconcileHistogram = "dbpilot_reconcile_duration_seconds"

// bucket is a cumulative histogram bucket.
type bucket struct {
	upperBound float64
	count      float64
}

// heapInUse is the Go runtime's series of the heap spans in use: the live
// heap plus fragmentation, without the garbage RSS also holds.
const heapInUse = "go_memstats_heap_inuse_bytes"

// scrape reads the operator's metrics.
func scrape(metricsURL string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", metricsURL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return families, nil
}

// gauge is the value of an unlabelled gauge.
func gauge(families map[string]*dto.MetricFamily, name string) (float64, error) {
	family, ok := families[name]
	if !ok || len(family.GetMetric()) != 1 {
		return 0, fmt.Errorf("no single %s in the operator's metrics", name)
	}
	return family.GetMetric()[0].GetGauge().GetValue(), nil
}

// reconcileBuckets sums, over results, the Database controller's reconcile
// duration buckets.
func reconcileBuckets(families map[string]*dto.MetricFamily) ([]bucket, error) {
	family, ok := families[reconcileHistogram]
	if !ok {
		return nil, fmt.Errorf("no %s in the operator's metrics", reconcileHistogram)
	}
	sums := map[float64]float64{}
	for _, m := range family.GetMetric() {
		controller := ""
		for _, label := range m.GetLabel() {
			if label.GetName() == "controller" {
				controller = label.GetValue()
			}
		}
		if controller != "database" {
			continue
		}
		// The text format's +Inf bucket is the sample count; the parser
		// keeps it out of the buckets.
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				sums[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		sums[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	buckets := make([]bucket, 0, len(sums))
	for bound, count := range sums {
		buckets = append(buckets, bucket{upperBound: bound, count: count})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].upperBound < buckets[j].upperBound })
	return buckets, nil
}

// quantile estimates the q-quantile of cumulative buckets the way
// Prometheus' histogram_quantile does: linear within the bucket that holds
// it, the last finite bound when it falls in the +Inf bucket.
func quantile(q float64, buckets []bucket) float64 {
	if len(buckets) == 0 || buckets[len(buckets)-1].count == 0 {
		return math.NaN()
	}
	rank := q * buckets[len(buckets)-1].count
	lowerBound, lowerCount := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.upperBound, 1) {
				return lowerBound
			}
			if b.count == lowerCount {
				return b.upperBound
			}
			return lowerBound + (b.upperBound-lowerBound)*(rank-lowerCount)/(b.count-lowerCount)
		}
		lowerBound, lowerCount = b.upperBound, b.count
	}
	return lowerBound
}
