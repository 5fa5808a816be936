package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/options"
)

// TestFailingDatabaseDoesNotStarveOthers runs one operator over two
// namespaces: in one, a ResourceQuota forbids StatefulSets, so a
// Database's pass fails every time; in the other, ten Databases are
// created at once. The failing one is retried with backoff (few attempts
// a minute, not one a second), each failed pass is counted in
// dbpilot_reconcile_errors_total, and the others all become Available
// meanwhile (the slowest one's time is printed; the suite's other tests
// run beside it, so it is not compared with a run without the failing
// Database).
func TestFailingDatabaseDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	blocked := restrictedNamespace(t, "quota-blocked")
	healthy := restrictedNamespace(t, "quota-healthy")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: blocked, Name: "no-statefulsets"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/statefulsets.apps": resource.MustParse("0")}}}
	g.Expect(k8sClient.Create(ctx, quota)).To(Succeed())
	opts := options.Default()
	opts.WatchNamespaces = blocked + "," + healthy
	opts.LeaderElection = false
	op := startOperatorWith(t, restConfig, opts)

	stuck := newDatabase(blocked, "stuck", dbpilotv1alpha1.EnginePostgres)
	// The quota admission controller learns of the quota through its
	// informer: the Database waits until a StatefulSet is refused.
	g.Eventually(func(g Gomega) {
		probe := &appsStatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: blocked, Name: "probe"}}
		probe.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		probe.Spec.Template.Labels = map[string]string{"a": "b"}
		probe.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
		err := k8sClient.Create(ctx, probe)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("exceeded quota"))
	}, 30*time.Second, pollInterval).Should(Succeed())
	errorsBefore := gathered(g, "dbpilot_reconcile_errors_total", map[string]string{"controller": "database"})
	g.Expect(k8sClient.Create(ctx, stuck)).To(Succeed())
	window := time.Now()

	// Ten healthy Databases at once, timed until each is Available.
	var wg sync.WaitGroup
	latencies := make([]time.Duration, 10)
	for i := range latencies {
		db := newDatabase(healthy, fmt.Sprintf("db-%d", i), dbpilotv1alpha1.EngineMariaDB)
		g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
		began := time.Now()
		wg.Go(func() {
			waitConverged(NewWithT(t), db)
			latencies[i] = time.Since(began)
		})
	}
	wg.Wait()
	slowest := time.Duration(0)
	for _, l := range latencies {
		slowest = max(slowest, l)
	}
	t.Logf("ten Databases beside a failing one: slowest Available after %.1fs", slowest.Seconds())

	g.Eventually(func(g Gomega) {
		fetch(g, stuck)
		g.Expect(stuck.Status.Conditions).NotTo(BeEmpty())
	}, convergeTimeout, pollInterval).Should(Succeed())
	time.Sleep(time.Until(window.Add(60 * time.Second)))
	attempts := 0
	for _, w := range op.writeRequests() {
		if strings.HasPrefix(w, "PATCH /apis/apps/v1/namespaces/"+blocked+"/statefulsets") {
			attempts++
		}
	}
	t.Logf("the failing Database's StatefulSet was attempted %d times in its first minute", attempts)
	g.Expect(attempts).To(BeNumerically(">", 1), "it is retried")
	g.Expect(attempts).To(BeNumerically("<=", 20), "with backoff, not every second")
	// Each refused attempt is a failed pass, which the operator counts
	// once the pass has returned (the other tests of this process may add
	// theirs).
	g.Eventually(func(g Gomega) float64 {
		return gathered(g, "dbpilot_reconcile_errors_total", map[string]string{"controller": "database"}) - errorsBefore
	}, convergeTimeout, pollInterval).Should(BeNumerically(">=", attempts), "dbpilot_reconcile_errors_total counts the failed passes")
	g.Expect(slowest).To(BeNumerically("<", convergeTimeout))
}
