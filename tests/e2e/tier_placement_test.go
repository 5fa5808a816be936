package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// smallOnlyCPU is what each node of a pool that takes small pods and no
// bigger one has to give: a small pod asks for 500m, a medium one for 1.
const smallOnlyCPU = "750m"

// podTiers lists the tier of each of the Database's pods that runs on a
// node, by name, and the names of those none took.
func podTiers(g Gomega, db *dbpilotv1alpha1.Database) (placed map[string]string, waiting []string) {
	placed = map[string]string{}
	for _, pod := range podsOf(g, db) {
		if pod.Spec.NodeName == "" {
			waiting = append(waiting, pod.Name)
			continue
		}
		placed[pod.Name] = pod.Annotations[desired.AnnotationTier]
	}
	return placed, waiting
}

// TestAutopilotTakesBackATierTheClusterCannotPlace runs the auto-pilot in
// Auto mode on a two-pod Database whose pods must each have a node of a
// two-node pool whose nodes hold a small pod and no bigger one. Under read
// pressure with no more pods allowed it takes the medium tier; the roll
// recreates the replica at medium, which the real scheduler cannot place.
// Left alone the roll would never end, the Database a replica short. Past
// the grace the auto-pilot takes the tier back (Unschedulable); the waiting
// pod, which never ran, is replaced from the small template (the
// StatefulSet controller would wait for it forever), and under the same
// pressure the auto-pilot does not take the medium tier again.
func TestAutopilotTakesBackATierTheClusterCannotPlace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, pool, source, cycle := placementWorld(t, "autopilot-tier-placement", 2, smallOnlyCPU)

	db := autopilotOnPool(ns, "snug", pool, 2,
		dbpilotv1alpha1.ReplicaBounds{Min: 2, Max: 2}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierMedium})
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	// Both pods saturated, no third pod allowed: the medium tier, whose
	// replica no node of the pool takes.
	source.set(map[promsource.PodKey]float64{{Namespace: ns, Pod: db.PodName(0)}: 0.5, {Namespace: ns, Pod: db.PodName(1)}: 0.5}, nil)
	g.Eventually(func(g Gomega) {
		cycle(g)
		fetch(g, db)
		g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierMedium), "last decision %+v", db.Status.Autopilot)
	}, convergeTimeout, 10*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionProgressing).Message).To(ContainSubstring("the scheduler cannot place " + db.PodName(1)))
	}, convergeTimeout, pollInterval).Should(Succeed())
	placed, _ := podTiers(g, db)
	g.Expect(placed).To(Equal(map[string]string{db.PodName(0): string(dbpilotv1alpha1.TierSmall)}), "the primary keeps serving at small")

	// Taken back once the pod has waited past the grace.
	g.Eventually(func(g Gomega) {
		cycle(g)
		fetch(g, db)
		g.Expect(db.Status.Autopilot.LastDecision).NotTo(BeNil())
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonUnschedulable), "last decision %+v", db.Status.Autopilot.LastDecision)
	}, convergeTimeout, 100*time.Millisecond).Should(Succeed())
	t.Logf("%s", db.Status.Autopilot.LastDecision.Message)
	g.Expect(db.Status.Autopilot.LastDecision.Action).To(Equal(string(autopilot.ActionTierDown)))
	g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierSmall))
	waitConverged(g, db)
	placed, waiting := podTiers(g, db)
	g.Expect(waiting).To(BeEmpty())
	g.Expect(placed).To(Equal(map[string]string{db.PodName(0): string(dbpilotv1alpha1.TierSmall), db.PodName(1): string(dbpilotv1alpha1.TierSmall)}))
	g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonPodReplaced))

	// The same pressure takes no tier the cluster cannot place.
	for range 12 {
		cycle(g)
		fetch(g, db)
		g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierSmall), "last decision %+v", db.Status.Autopilot.LastDecision)
	}
	g.Expect(statefulSetOf(g, db).Spec.Template.Annotations).To(HaveKeyWithValue(desired.AnnotationTier, string(dbpilotv1alpha1.TierSmall)))
}

// TestATierTakenBackReplacesThePodNoNodeTook gives a one-pod Database a
// node that holds a small pod and no bigger one. Its owner asks for the
// medium tier: the pod is recreated at medium and waits for a node, and
// the Database says why. The owner takes it back: the waiting pod, which
// never ran, is replaced from the small template (the StatefulSet
// controller alone would wait for it forever), and the Database is
// Available again on its volume.
func TestATierTakenBackReplacesThePodNoNodeTook(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tier-taken-back")
	startOperator(t, ns)
	nodePoolOfCPU(t, "e2e-tier-taken-back-pool", 1, smallOnlyCPU)

	db := newDatabase(ns, "lone", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Scheduling = onePodPerNodeOf("e2e-tier-taken-back-pool")
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	claims := claimNames(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierMedium })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionProgressing).Message).To(ContainSubstring("the scheduler cannot place " + db.PodName(0)))
		_, waiting := podTiers(g, db)
		g.Expect(waiting).To(ConsistOf(db.PodName(0)))
	}, convergeTimeout, pollInterval).Should(Succeed())

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierSmall })
	waitConverged(g, db)
	placed, waiting := podTiers(g, db)
	g.Expect(waiting).To(BeEmpty())
	g.Expect(placed).To(Equal(map[string]string{db.PodName(0): string(dbpilotv1alpha1.TierSmall)}))
	g.Expect(claimNames(g, db)).To(Equal(claims), "the same volume")
	g.Eventually(func(g Gomega) []string { return eventNotes(g, db) }, convergeTimeout, pollInterval).
		Should(ContainElement(ContainSubstring("Pod " + db.PodName(0) + " never ran")))
	pods := podsOf(g, db)
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
}

// TestAutopilotTakesBackALonePodsTierNoNodeHolds runs the auto-pilot in
// Auto mode on a one-pod Database (no more pods allowed) on a node that
// holds a small pod and no bigger one, where pods are not resized in place
// (kwok's report no container resources). Saturated, it takes the medium
// tier: the lone pod is recreated at medium and waits for a node, the
// Database down and its metrics gone with it. Past the grace the auto-pilot
// takes the tier back all the same (a decision on no metrics), the waiting
// pod is replaced from the small template, and the Database is Available
// again on its volume.
func TestAutopilotTakesBackALonePodsTierNoNodeHolds(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, pool, source, cycle := placementWorld(t, "autopilot-lone-tier", 1, smallOnlyCPU)

	db := autopilotOnPool(ns, "alone", pool, 1,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 1}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierMedium})
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	claims := claimNames(g, db)

	source.set(map[promsource.PodKey]float64{{Namespace: ns, Pod: db.PodName(0)}: 0.5}, nil)
	g.Eventually(func(g Gomega) {
		cycle(g)
		fetch(g, db)
		g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierMedium), "last decision %+v", db.Status.Autopilot)
	}, convergeTimeout, 10*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		_, waiting := podTiers(g, db)
		g.Expect(waiting).To(ConsistOf(db.PodName(0)))
	}, convergeTimeout, pollInterval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		cycle(g)
		fetch(g, db)
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonUnschedulable), "last decision %+v", db.Status.Autopilot.LastDecision)
	}, convergeTimeout, 100*time.Millisecond).Should(Succeed())
	t.Logf("%s", db.Status.Autopilot.LastDecision.Message)
	g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierSmall))
	waitConverged(g, db)
	placed, waiting := podTiers(g, db)
	g.Expect(waiting).To(BeEmpty())
	g.Expect(placed).To(Equal(map[string]string{db.PodName(0): string(dbpilotv1alpha1.TierSmall)}))
	g.Expect(claimNames(g, db)).To(Equal(claims), "the same volume")
}
