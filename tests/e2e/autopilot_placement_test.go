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

// placementWorld makes the test's namespace, named name, and a pool of
// nodes fake nodes of its own, each with cpu to give, and returns them with
// a runner that decides on a fake clock, from metrics the test crafts, and
// takes back what the cluster has not placed within a second.
func placementWorld(t *testing.T, name string, nodes int, cpu string) (ns, pool string, source *craftedSource, cycle func(Gomega)) {
	t.Helper()
	ns = restrictedNamespace(t, name)
	pool = "e2e-" + name + "-pool"
	nodePoolOfCPU(t, pool, nodes, cpu)
	runner, source, _, cycle := runnerOnFakeClock(t, ns)
	runner.PlacementGrace = time.Second
	return ns, pool, source, cycle
}

// autopilotOnPool is a PostgreSQL Database of replicas pods, each on a
// node of pool of its own, whose auto-pilot in Auto mode moves within the
// bounds: up after 30 s, down only after an hour, the tier with no
// cooldown.
func autopilotOnPool(ns, name, pool string, replicas int32, bounds dbpilotv1alpha1.ReplicaBounds, tiers dbpilotv1alpha1.TierBounds) *dbpilotv1alpha1.Database {
	db := newDatabase(ns, name, dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To(replicas)
	db.Spec.Scheduling = onePodPerNodeOf(pool)
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{
		Mode:                          dbpilotv1alpha1.AutopilotAuto,
		Replicas:                      &bounds,
		Tiers:                         &tiers,
		ScaleUpStabilizationSeconds:   ptr.To[int32](30),
		ScaleDownStabilizationSeconds: ptr.To[int32](3600),
		TierCooldownSeconds:           ptr.To[int32](0),
	}
	return db
}

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
	ns, pool, source, cycle := placementWorld(t, "autopilot-placement", 2, "32")

	db := autopilotOnPool(ns, "pooled", pool, 2,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierSmall})
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
