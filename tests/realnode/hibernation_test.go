package realnode_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// hibernateUnderWriter hibernates a two-pod Database whose primary is the
// pod of ordinal 1 while a writer writes through the -rw Service: the
// primary moves to ordinal 0 first (the pod that starts first on resume),
// every pod stops and the volumes stay. Resumed, ordinal 0 serves as the
// primary, ordinal 1 streams from it caught up, and every row the writer
// had acknowledged is there. It prints how long stopping and starting
// took.
func hibernateUnderWriter(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, insert string) {
	ctx := context.Background()
	first, second := db.PodName(0), db.PodName(1)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(second))
		g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(first)))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	w := startFreshWriter(g, db, insert)
	defer w.finish()

	started := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = true })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseHibernated))
		pods, err := clientset.CoreV1().Pods(db.Namespace).List(ctx, metav1.ListOptions{LabelSelector: db.Selector()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(BeEmpty())
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())
	stopped := time.Since(started)
	g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonSwitchingOver)).
		To(ContainSubstring("Switching the primary over from " + second + " to " + first + " (spec.hibernate stops the pods"))
	for _, name := range []string{db.ClaimName(0), db.ClaimName(1)} {
		_, err := clientset.CoreV1().PersistentVolumeClaims(db.Namespace).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "hibernating keeps the volume %s", name)
	}
	result := w.finish()

	resumed := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = false })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(available(db)).To(BeTrue())
		g.Expect(db.Status.CurrentPrimary).To(Equal(first))
		g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(second)))
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
	resumeTook := time.Since(resumed)
	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	g.Expect(primary.queryInt(ctx, tc.isReplica)).To(Equal(0), "the -rw Service reaches a writable primary")
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("hibernate %s: stop_s=%.1f resume_s=%.1f rows_acknowledged=%d rows_lost=%d",
		tc.engine, stopped.Seconds(), resumeTook.Seconds(), len(result.acknowledged), lost)
	g.Expect(len(result.acknowledged)).To(BeNumerically(">", 20), "the writer wrote before the pods stopped")
	g.Expect(lost).To(BeZero(), "hibernating loses no acknowledged row")
}
