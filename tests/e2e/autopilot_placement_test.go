package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
)

// TestAutopilotTakesBackPodsTheClusterCannotPlace runs the auto-pilot in
// Auto mode on a Database whose pods must each have a node of a two-node
// pool (a required anti-affinity): under read pressure it adds a third
// pod, which the real scheduler cannot place. Left alone, that scale-up
// would never end, and the auto-pilot would wait on it forever. Past the
// grace it takes the pod back (Unschedulable), and under the same pressure
// it does not add it again.
func TestAutopilotTakesBackPodsTheClusterCannotPlace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "autopilot-placement")
	nodePool(t, "e2e-placement-pool", 2)
	runner, source, _, cycle := runnerOnFakeClock(t, ns)
	runner.PlacementGrace = time.Second

	db := newDatabase(ns, "pooled", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Scheduling = onePodPerNodeOf("e2e-placement-pool")
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{
		Mode:                          dbpilotv1alpha1.AutopilotAuto,
		Replicas:                      &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3},
		Tiers:                         &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierSmall},
		ScaleUpStabilizationSeconds:   ptr.To[int32](30),
		ScaleDownStabilizationSeconds: ptr.To[int32](3600),
	}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	// Both pods saturated: a third pod, which no node of the pool takes.
	source.set(map[promsource.PodKey]float64{{Namespace: ns, Pod: db.PodName(0)}: 0.5, {Namespace: ns, Pod: db.PodName(1)}: 0.5}, nil)
	g.Eventually(func(g Gomega) {
		cycle(g)
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(3)))
	}, convergeTimeout, 10*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionProgressing).Message).To(ContainSubstring("the scheduler cannot place " + db.PodName(2)))
	}, convergeTimeout, pollInterval).Should(Succeed())

	// Taken back once it has waited past the grace.
	g.Eventually(func(g Gomega) {
		cycle(g)
		fetch(g, db)
		g.Expect(db.Status.Autopilot.LastDecision).NotTo(BeNil())
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonUnschedulable), "last decision %+v", db.Status.Autopilot.LastDecision)
	}, convergeTimeout, 100*time.Millisecond).Should(Succeed())
	t.Logf("%s", db.Status.Autopilot.LastDecision.Message)
	g.Expect(db.Status.Autopilot.LastDecision.Action).To(Equal(string(autopilot.ActionScaleDown)))
	waitConverged(g, db)
	g.Expect(db.EffectiveReplicas()).To(Equal(int32(2)))

	// The same pressure adds no pod the cluster cannot place.
	for range 12 {
		cycle(g)
		fetch(g, db)
		g.Expect(db.EffectiveReplicas()).To(Equal(int32(2)), "last decision %+v", db.Status.Autopilot.LastDecision)
	}
	g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonUnschedulable), "no decision since: last decision %+v", db.Status.Autopilot.LastDecision)
	g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(2)))
}
