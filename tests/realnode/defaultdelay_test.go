package realnode_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// defaultDelayEnv runs TestPrimaryPodKilledWithTheDefaultDelay (make
// bench-failover sets it): a measurement, kept out of make test for its
// length.
const defaultDelayEnv = "DBPILOT_BENCH_DEFAULT_DELAY"

// TestPrimaryPodKilledWithTheDefaultDelay kills the primary's pod of a
// two-pod Database of each engine with the default failover delay (30 s)
// under a continuous writer. The StatefulSet recreates the pod on the same
// volume; whether it serves again before the delay runs out or the replica
// is promoted, writes through -rw resume, both pods end up ready with one
// primary, and the test prints the write-unavailable time, whether it
// failed over and the acknowledged rows lost.
func TestPrimaryPodKilledWithTheDefaultDelay(t *testing.T) {
	if os.Getenv(defaultDelayEnv) == "" {
		t.Skipf("a measurement: set %s=1 (make bench-failover does)", defaultDelayEnv)
	}
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := "real-default-delay-" + string(tc.engine)
			db := twoPodDatabase(t, g, ns, tc.replicationSQL, tc.createWrites, func(db *dbpilotv1alpha1.Database) {
				db.Spec.Failover = nil
			})
			w := startWriter(db, tc.insert, 1)
			t.Cleanup(func() { w.finish() })
			w.writesResume(g, 20)

			killed := time.Now()
			g.Expect(clientset.CoreV1().Pods(ns).Delete(ctx, db.PodName(0), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
			w.writesResume(g, 20)
			g.Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
				g.Expect(db.Status.Instances).To(HaveLen(2))
				primaries := 0
				for _, instance := range db.Status.Instances {
					g.Expect(instance.Ready).To(BeTrue(), instance.Name)
					if instance.Role == "primary" {
						primaries++
					}
				}
				g.Expect(primaries).To(Equal(1))
			}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
			result := w.finish()

			primary, err := connectApp(ctx, db)
			g.Expect(err).NotTo(HaveOccurred())
			defer primary.close()
			lost := lostRows(g, primary, result.acknowledged)
			failedOver := "no"
			if db.Status.CurrentPrimary != db.PodName(0) {
				failedOver = "yes"
			}
			t.Logf("failover %s default_delay write_unavailable_s=%.1f failed_over=%s rows_acknowledged=%d rows_lost=%d (%.0fs after the kill)",
				tc.engine, result.longestGap.Seconds(), failedOver, len(result.acknowledged), lost, time.Since(killed).Seconds())
			if failedOver == "no" {
				g.Expect(lost).To(BeZero(), "the primary came back on its own volume, yet rows are missing")
			}
		})
	}
}
