package realnode_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestParametersReachTheServers sets spec.parameters of a two-pod
// PostgreSQL Database under a writer: a setting the server reloads reaches
// both servers with no restart, a value the server refuses changes nothing
// and shows in Degraded, and a setting that needs a restart rolls the
// pods, the primary after a switchover, without losing a write.
func TestParametersReachTheServers(t *testing.T) {
	besideOtherTests(t, 1000) // two small pods
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-parameters"
	tc := failoverEngines[0]
	db := writableDatabase(t, g, ns, tc.replicationSQL, tc.createWrites, 2, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "64MB"}
	})
	show := func(g Gomega, pod, name string) string {
		session, err := connectAppToPod(ctx, db, pod)
		g.Expect(err).NotTo(HaveOccurred())
		defer session.close()
		var value string
		g.Expect(session.(pgSession).conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&value)).To(Succeed())
		return value
	}
	pods := []string{db.PodName(0), db.PodName(1)}
	for _, pod := range pods {
		g.Expect(show(g, pod, "work_mem")).To(Equal("64MB"), "work_mem on %s from the start", pod)
	}
	w := startWriter(db, tc.insert, 1)
	defer w.finish()
	w.writesResume(g, 10)

	// Reloaded: both servers, no pod restarted, the template unchanged.
	before := podsByName(g, db)
	templateHash := expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]
	started := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "32MB", "log_min_duration_statement": "250ms"}
	})
	g.Eventually(func(g Gomega) {
		for _, pod := range pods {
			g.Expect(show(g, pod, "work_mem")).To(Equal("32MB"), pod)
			g.Expect(show(g, pod, "log_min_duration_statement")).To(Equal("250ms"), pod)
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
	t.Logf("parameters reloaded_s=%.1f", time.Since(started).Seconds())
	for name, pod := range podsByName(g, db) {
		g.Expect(pod.UID).To(Equal(before[name].UID), "pod %s was replaced", name)
		g.Expect(restartCount(pod)).To(Equal(restartCount(before[name])), "pod %s restarted", name)
	}
	g.Expect(expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]).To(Equal(templateHash), "a reloaded setting changed the pod template")

	// Refused: Degraded names the value; the servers keep theirs.
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "lots", "log_min_duration_statement": "250ms"}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		degraded := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonParametersRefused))
		g.Expect(degraded.Message).To(ContainSubstring(`spec.parameters`))
		g.Expect(degraded.Message).To(ContainSubstring(`invalid value for parameter "work_mem": "lots"`))
	}, 3*time.Minute, time.Second).Should(Succeed())
	for _, pod := range pods {
		g.Expect(show(g, pod, "work_mem")).To(Equal("32MB"), "work_mem on %s after a refused value", pod)
	}

	// Needs a restart: the pods roll, replicas first, the primary after
	// a switchover; no write is lost.
	before = podsByName(g, db)
	started = time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "32MB", "max_locks_per_transaction": "128"}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
		g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, 1, 0)))
		expectRolledOut(g, db, 2)
		for _, pod := range pods {
			g.Expect(show(g, pod, "max_locks_per_transaction")).To(Equal("128"), pod)
		}
	}, 5*time.Minute, time.Second).Should(Succeed(), func() string { return eventNotes(ns) })
	took := time.Since(started)
	for name, pod := range podsByName(g, db) {
		g.Expect(pod.UID).NotTo(Equal(before[name].UID), "pod %s was not restarted", name)
	}
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonRestartingForParameters)).To(ContainSubstring("spec.parameters waits for a restart"))
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonSwitchingOver)).To(ContainSubstring("a rollout is about to restart the primary's pod"))
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailingOver)).To(BeEmpty(), "the restart caused a failover")
	w.writesResume(g, 20)
	result := w.finish()
	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("parameters restart_s=%.1f write_unavailable_s=%.1f rows_acknowledged=%d rows_lost=%d",
		took.Seconds(), result.longestGap.Seconds(), len(result.acknowledged), lost)
	g.Expect(lost).To(BeZero())
	// Settled: nothing waits, and nothing rolls again.
	hash := expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]
	g.Consistently(func(g Gomega) {
		g.Expect(expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]).To(Equal(hash))
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		for _, instance := range db.Status.Instances {
			g.Expect(instance.PendingRestart).To(BeEmpty(), instance.Name)
		}
	}, 20*time.Second, 2*time.Second).Should(Succeed())
}
