package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/options"
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
	opts := options.Default()
	opts.WatchNamespaces = ns
	opts.LeaderElection = false
	opts.AutopilotInterval = time.Hour
	startOperatorWith(t, restConfig, opts)
	nodePool(t, "e2e-placement-pool", 2)

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: clientset.EventsV1()})
	stop := make(chan struct{})
	broadcaster.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); broadcaster.Shutdown() })
	source := &craftedSource{}
	clock := clocktesting.NewFakeClock(time.Now())
	runner := &controllers.AutopilotRunner{
		Client:         client.NewNamespacedClient(k8sClient, ns),
		Source:         source,
		Recorder:       broadcaster.NewRecorder(k8sClient.Scheme(), controllers.AutopilotFieldOwner),
		Interval:       15 * time.Second,
		SettleTime:     30 * time.Second,
		FlapWindow:     time.Minute,
		PlacementGrace: time.Second,
		Clock:          clock,
	}
	cycle := func(g Gomega) {
		clock.Step(15 * time.Second)
		g.Expect(runner.Cycle(ctx)).To(Succeed())
	}

	db := newDatabase(ns, "pooled", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Scheduling = &dbpilotv1alpha1.SchedulingSpec{
		NodeSelector:    map[string]dbpilotv1alpha1.LabelValue{poolLabel: "e2e-placement-pool"},
		Tolerations:     []dbpilotv1alpha1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: "e2e-placement-pool", Effect: corev1.TaintEffectNoSchedule}},
		PodAntiAffinity: &dbpilotv1alpha1.PodAntiAffinitySpec{Type: dbpilotv1alpha1.PodAntiAffinityRequired, TopologyKey: corev1.LabelHostname},
	}
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
