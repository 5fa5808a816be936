package autopilot

import (
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// BenchmarkDecideCycle decides for 10,000 Databases, each with 20 minutes of
// history, as one auto-pilot cycle does (Prometheus excluded). The goal is
// well under a second per cycle; `make bench-autopilot` prints it.
func BenchmarkDecideCycle(b *testing.B) {
	const databases = 10000
	inputs := make([]Input, databases)
	for i := range inputs {
		size := Size{Replicas: int32(1 + i%4), Tier: dbpilotv1alpha1.TierAt(i % 5)}
		load := Load{Write: 0.2 + float64(i%7)*0.3, Read: 0.5 + float64(i%11)*0.4}
		inputs[i] = input(size, steady(size, load, 20*time.Minute))
	}
	b.ResetTimer()
	for range b.N {
		for i := range inputs {
			Decide(inputs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/cycle")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/databases/1e3, "µs/database")
}
