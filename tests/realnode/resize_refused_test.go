package realnode_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestLonePodNeverRestartedForAnAutopilotTierItsNodeRefuses gives a
// one-pod MariaDB Database's auto-pilot the xlarge tier (4 CPUs, 8Gi),
// more than the real node has: the test writes the recommendation as the
// auto-pilot would (its decision to grow is the engine's tests'). Resizing
// the pod in place is refused. Rolling it instead would stop the Database,
// and no node would take the recreated pod. So the pod runs on at its tier,
// marked with the tier refused, with a Warning. The suite's auto-pilot,
// which has no Prometheus here, reads the mark and takes its tier back on
// no metrics (Unschedulable); the mark goes, and the same pod, never
// restarted, takes writes throughout, the Database converged.
func TestLonePodNeverRestartedForAnAutopilotTierItsNodeRefuses(t *testing.T) {
	besideOtherTests(t, 500) // one small pod
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-resize-refused"
	restrictedNamespace(t, ns)

	db := autopilotDatabaseOf(newDatabase(ns, "lone", dbpilotv1alpha1.EngineMariaDB, "10.11", 1), dbpilotv1alpha1.AutopilotAuto,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 1}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierXLarge})
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitAvailable(g, db, 5*time.Minute)
	// The Service's rules may trail the Database's Available; errors are
	// flattened to their text, which holds no password.
	var session sqlSession
	g.Eventually(func() error {
		var err error
		if session, err = connectApp(ctx, db); err != nil {
			return textOnly(err)
		}
		return nil
	}, time.Minute, time.Second).Should(Succeed())
	defer session.close()
	g.Expect(session.exec(ctx, "CREATE TABLE notes (id int PRIMARY KEY)")).To(Succeed())
	before, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// The auto-pilot's tier becomes xlarge: resizing in place is refused,
	// and the pod runs on at small, marked. (Written again until the
	// refusal shows: the suite's auto-pilot may write the recommendation
	// it read before.)
	asked := time.Now()
	g.Eventually(func(g Gomega) {
		if refusalWarning(g, db) == "" {
			recommendTier(g, db, dbpilotv1alpha1.TierXLarge)
		}
		g.Expect(refusalWarning(g, db)).To(ContainSubstring("a lone pod is not restarted for the auto-pilot's tier"))
	}, time.Minute, 2*time.Second).Should(Succeed())
	held := time.Now()
	t.Logf("held %.1fs after the tier was asked: %s", held.Sub(asked).Seconds(), refusalWarning(g, db))

	// The auto-pilot reads the mark and takes its tier back on its own,
	// with no metrics (the suite's has no Prometheus here).
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Autopilot).NotTo(BeNil())
		g.Expect(db.Status.Autopilot.LastDecision).NotTo(BeNil())
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonUnschedulable), "%+v", db.Status.Autopilot.LastDecision)
		g.Expect(db.Status.Autopilot.LastDecision.Action).To(Equal(string(autopilot.ActionTierDown)))
		g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierSmall))
	}, time.Minute, time.Second).Should(Succeed())
	t.Logf("taken back %.1fs after the hold: %s", time.Since(held).Seconds(), db.Status.Autopilot.LastDecision.Message)

	// The resize withdrawn, the mark dropped, the Database converged: the
	// same pod, never restarted, taking writes throughout.
	id := 0
	write := func(g Gomega) {
		id++
		g.Expect(session.exec(ctx, "INSERT INTO notes VALUES ("+strconv.Itoa(id)+")")).To(Succeed(), "writes go on")
	}
	samePod := func(g Gomega) {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.UID).To(Equal(before.UID), "the pod was not recreated")
		g.Expect(restartCount(*pod)).To(Equal(restartCount(*before)), "no container restarted")
		g.Expect(pod.Annotations).To(HaveKeyWithValue(desired.AnnotationTier, string(dbpilotv1alpha1.TierSmall)))
		g.Expect(pod.Annotations).NotTo(HaveKey(desired.AnnotationResizeRefused))
	}
	g.Eventually(func(g Gomega) {
		write(g)
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(available(db)).To(BeTrue())
		g.Expect(meta.IsStatusConditionFalse(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)).To(BeTrue(), "%+v", db.Status.Conditions)
		samePod(g)
	}, 2*time.Minute, time.Second).Should(Succeed())
	// The auto-pilot keeps below xlarge (it has no metrics to want more
	// anyway), and nothing moves.
	g.Consistently(func(g Gomega) {
		write(g)
		samePod(g)
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)).To(BeTrue())
		g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierSmall), "status says what runs")
		g.Expect(db.EffectiveTier()).To(Equal(dbpilotv1alpha1.TierSmall))
	}, 15*time.Second, 2*time.Second).Should(Succeed())
	rows, err := session.queryInt(ctx, "SELECT count(*) FROM notes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows).To(Equal(id), "every acknowledged row")
}

// refusalWarning is the note of the Database's Warning that a refused
// resize holds its lone pod; empty when there is none.
func refusalWarning(g Gomega, db *dbpilotv1alpha1.Database) string {
	events, err := clientset.CoreV1().Events(db.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", db.Name),
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning)).String()})
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range events.Items {
		if e.Reason == dbpilotv1alpha1.EventReasonTierChanged {
			return e.Message
		}
	}
	return ""
}

// recommendTier writes the auto-pilot's recommendation of one pod of tier
// for db, as the auto-pilot's field manager.
func recommendTier(g Gomega, db *dbpilotv1alpha1.Database, tier dbpilotv1alpha1.Tier) {
	status := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"autopilot": map[string]any{
		"mode": string(dbpilotv1alpha1.AutopilotAuto), "recommendation": map[string]any{"replicas": int64(1), "tier": string(tier)},
	}}}}
	status.SetGroupVersionKind(dbpilotv1alpha1.GroupVersion.WithKind("Database"))
	status.SetNamespace(db.Namespace)
	status.SetName(db.Name)
	g.Expect(k8sClient.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(status),
		client.FieldOwner(controllers.AutopilotFieldOwner), client.ForceOwnership)).To(Succeed())
}
