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
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestLonePodNeverRestartedForAnAutopilotTierItsNodeRefuses gives a
// one-pod MariaDB Database's auto-pilot the xlarge tier (4 CPUs, 8Gi),
// more than the real node has: the test writes the recommendation as the
// auto-pilot would (the decision itself is the engine's tests'; the suite's
// auto-pilot has no Prometheus here, so it keeps the recommendation).
// Resizing the pod in place is refused. Rolling it instead would stop the
// Database, and no node would take the recreated pod. So the pod runs on at
// its tier, never restarted, and keeps taking writes; it is marked with the
// tier refused (which the auto-pilot reads), and Progressing and a Warning
// say why. Once the recommendation is taken back, the tier is withdrawn,
// the mark goes, and the same pod serves on, the Database converged.
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
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer session.close()
	g.Expect(session.exec(ctx, "CREATE TABLE notes (id int PRIMARY KEY)")).To(Succeed())
	before, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// The auto-pilot's tier becomes xlarge: resizing in place is refused,
	// and the pod runs on at small.
	recommendTier(g, db, dbpilotv1alpha1.TierXLarge)
	asked := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		progressing := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Message).To(ContainSubstring("the lone pod runs on at its tier until the auto-pilot takes it back"))
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Annotations).To(HaveKeyWithValue(desired.AnnotationResizeRefused, string(dbpilotv1alpha1.TierXLarge)))
	}, time.Minute, time.Second).Should(Succeed())
	t.Logf("held %.0fs after the tier was asked: %s", time.Since(asked).Seconds(),
		meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing).Message)
	g.Expect(refusalWarning(g, db)).To(ContainSubstring("a lone pod is not restarted for the auto-pilot's tier"))
	// Many passes of the reconciler later (it looks every 5 s), still the
	// same pod, serving at small.
	id := 0
	g.Consistently(func(g Gomega) {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.UID).To(Equal(before.UID), "the pod was not recreated")
		g.Expect(restartCount(*pod)).To(Equal(restartCount(*before)), "no container restarted")
		g.Expect(pod.Annotations).To(HaveKeyWithValue(desired.AnnotationTier, string(dbpilotv1alpha1.TierSmall)))
		id++
		g.Expect(session.exec(ctx, "INSERT INTO notes VALUES ("+strconv.Itoa(id)+")")).To(Succeed(), "writes go on")
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)).To(BeTrue())
		g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierSmall), "status says what runs")
	}, 20*time.Second, 2*time.Second).Should(Succeed())

	// The auto-pilot takes its tier back: the resize is withdrawn, the
	// mark dropped, and the same pod serves on.
	recommendTier(g, db, dbpilotv1alpha1.TierSmall)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(available(db)).To(BeTrue())
		g.Expect(meta.IsStatusConditionFalse(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)).To(BeTrue(), "%+v", db.Status.Conditions)
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Annotations).NotTo(HaveKey(desired.AnnotationResizeRefused))
		g.Expect(pod.UID).To(Equal(before.UID), "the pod was not recreated")
		g.Expect(restartCount(*pod)).To(Equal(restartCount(*before)), "no container restarted")
	}, 2*time.Minute, time.Second).Should(Succeed())
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
// for db, as the auto-pilot's field manager, until it holds over a cycle
// of the suite's auto-pilot: without Prometheus that keeps the
// recommendation it reads, which its cache may not have yet.
func recommendTier(g Gomega, db *dbpilotv1alpha1.Database, tier dbpilotv1alpha1.Tier) {
	status := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"autopilot": map[string]any{
		"mode": string(dbpilotv1alpha1.AutopilotAuto), "recommendation": map[string]any{"replicas": int64(1), "tier": string(tier)},
	}}}}
	status.SetGroupVersionKind(dbpilotv1alpha1.GroupVersion.WithKind("Database"))
	status.SetNamespace(db.Namespace)
	status.SetName(db.Name)
	effective := func(g Gomega) dbpilotv1alpha1.Tier {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		return db.EffectiveTier()
	}
	g.Eventually(func(g Gomega) {
		if effective(g) != tier {
			g.Expect(k8sClient.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(status.DeepCopy()),
				client.FieldOwner(controllers.AutopilotFieldOwner), client.ForceOwnership)).To(Succeed())
		}
		g.Consistently(effective, autopilotInterval+time.Second, 200*time.Millisecond).Should(Equal(tier))
	}, time.Minute, time.Second).Should(Succeed())
}
