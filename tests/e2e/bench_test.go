package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// BenchmarkCreateToAvailable reports the time from creating 1 and 50
// Databases to all of them being Available with every pod ready, on the
// local control plane. `make bench-reconcile`.
func BenchmarkCreateToAvailable(b *testing.B) {
	for _, count := range []int{1, 50} {
		b.Run(fmt.Sprintf("databases=%d", count), func(b *testing.B) {
			var total time.Duration
			var p50, p95 time.Duration
			for i := range b.N {
				ns := restrictedNamespace(b, fmt.Sprintf("bench-%d-%d", count, i))
				op := startOperator(b, ns)
				ctx := context.Background()
				began := time.Now()
				dbs := make([]*dbpilotv1alpha1.Database, count)
				for j := range dbs {
					dbs[j] = newDatabase(ns, fmt.Sprintf("db-%d", j), dbpilotv1alpha1.EnginePostgres)
					if err := k8sClient.Create(ctx, dbs[j]); err != nil {
						b.Fatal(err)
					}
				}
				availableAfter := make([]time.Duration, 0, count)
				pending := map[int]bool{}
				for j := range dbs {
					pending[j] = true
				}
				deadline := time.Now().Add(10 * time.Minute)
				for len(pending) > 0 {
					if time.Now().After(deadline) {
						b.Fatalf("%d Databases not Available after 10 minutes", len(pending))
					}
					for j := range pending {
						db := &dbpilotv1alpha1.Database{}
						if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(dbs[j]), db); err != nil {
							continue
						}
						if meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable) && db.Status.ReadyReplicas == 1 {
							availableAfter = append(availableAfter, time.Since(began))
							delete(pending, j)
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
				elapsed := time.Since(began)
				total += elapsed
				sort.Slice(availableAfter, func(a, c int) bool { return availableAfter[a] < availableAfter[c] })
				p50 = availableAfter[len(availableAfter)/2]
				p95 = availableAfter[len(availableAfter)*95/100]
				b.Logf("%d Databases: all Available after %.2fs (p50 %.2fs, p95 %.2fs), %d write requests", count, elapsed.Seconds(), p50.Seconds(), p95.Seconds(), op.writes.Load())
				op.stop(b)
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "all-available-s/op")
			b.ReportMetric(p50.Seconds(), "p50-s")
			b.ReportMetric(p95.Seconds(), "p95-s")
		})
	}
}
