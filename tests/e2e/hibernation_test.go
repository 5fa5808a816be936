package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestHibernationStopsThePodsAndKeepsEverything hibernates a three-pod
// Database with a backup every five seconds: the pods stop and a backup
// that has not started fails (no instance will run to take it); the
// volumes, Services and StatefulSet stay; no scheduled backup is taken
// while it hibernates and one created by hand fails at once, naming why; a
// tier change made meanwhile changes no pod. On resume the pods start
// again, on the new tier, and the schedule takes the run it missed.
func TestHibernationStopsThePodsAndKeepsEverything(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "hibernate")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](3)
	db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "*/5 * * * * *"}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	// The fake nodes run no instance program: a scheduled backup waits
	// for one to take it.
	var waiting string
	g.Eventually(func(g Gomega) {
		backups := backupsOf(g, db)
		g.Expect(backups).NotTo(BeEmpty())
		waiting = backups[0].Name
	}, convergeTimeout, pollInterval).Should(Succeed())

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = true })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseHibernated), "%+v", db.Status.Conditions)
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
		available := findCondition(db, dbpilotv1alpha1.ConditionAvailable)
		g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(available.Reason).To(Equal(dbpilotv1alpha1.ReasonHibernated))
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionProgressing).Reason).To(Equal(dbpilotv1alpha1.ReasonHibernated))
		g.Expect(db.Status.Ready).To(Equal("0/0"))
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(BeZero())
		g.Expect(podsOf(g, db)).To(BeEmpty())
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(claimNames(g, db)).To(ConsistOf(claimName(db, 0), claimName(db, 1), claimName(db, 2), db.BackupClaimName()), "hibernating keeps every volume")
	waited := &dbpilotv1alpha1.DatabaseBackup{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: waiting}, waited)).To(Succeed())
		g.Expect(waited.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseFailed))
		g.Expect(waited.Status.Message).To(ContainSubstring("hibernates (spec.hibernate)"))
	}, 30*time.Second, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventNotes(g, db)).To(ContainElement("Stopping the 3 pods, replicas first, the primary ledger-0 last; the volumes are kept"))
	}, 30*time.Second, pollInterval).Should(Succeed())

	// Nothing is scheduled while it hibernates, and a backup asked for
	// fails at once.
	scheduled := len(backupsOf(g, db))
	byHand := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"}, Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: db.Name}}
	g.Expect(k8sClient.Create(ctx, byHand)).To(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, byHand)
		g.Expect(byHand.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseFailed))
		g.Expect(byHand.Status.Message).To(Equal("Database ledger hibernates (spec.hibernate): no instance runs to take the backup"))
	}, 30*time.Second, pollInterval).Should(Succeed())
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierMedium })
	g.Consistently(func(g Gomega) {
		g.Expect(backupsOf(g, db)).To(HaveLen(scheduled + 1)) // and the one by hand
		g.Expect(podsOf(g, db)).To(BeEmpty())
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseHibernated), "%+v", db.Status.Conditions)
	}, 12*time.Second, pollInterval).Should(Succeed())
	g.Expect(statefulSetOf(g, db).Spec.Template.Annotations).To(HaveKeyWithValue(desired.AnnotationTier, string(dbpilotv1alpha1.TierMedium)))

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = false })
	waitConverged(g, db)
	g.Expect(db.Status.Ready).To(Equal("3/3"))
	for _, pod := range podsOf(g, db) {
		g.Expect(pod.Annotations).To(HaveKeyWithValue(desired.AnnotationTier, string(dbpilotv1alpha1.TierMedium)), pod.Name)
	}
	g.Expect(claimNames(g, db)).To(HaveLen(4), "the pods came back on their volumes")
	g.Eventually(func(g Gomega) {
		g.Expect(eventNotes(g, db)).To(ContainElement("Starting 3 pods again, the primary ledger-0 first"))
		g.Expect(len(backupsOf(g, db))).To(BeNumerically(">", scheduled+1), "the schedule takes the run it missed")
	}, 30*time.Second, pollInterval).Should(Succeed())
}

// TestAutopilotHoldsWhileHibernated: the auto-pilot of a hibernating
// Database (Auto mode) holds with the reason Stopped, cycle after cycle
// and past the time its metrics would be stale, and raises no holding
// series for an alert; the hibernation series is there until it resumes.
func TestAutopilotHoldsWhileHibernated(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "autopilot-hibernate")
	_, source, _, cycle := runnerOnFakeClock(t, ns)

	db := newDatabase(ns, "seasonal", dbpilotv1alpha1.EngineMariaDB)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{
		Mode:     dbpilotv1alpha1.AutopilotAuto,
		Replicas: &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3},
		Tiers:    &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierMedium},
	}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	labels := map[string]string{"namespace": ns, "database": db.Name}
	g.Expect(gathered(g, "dbpilot_database_hibernated", labels)).To(BeZero())

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = true })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseHibernated))
	}, convergeTimeout, pollInterval).Should(Succeed())
	// Saturated pods of its name, as a Prometheus with old series would
	// report them: a running Database would grow.
	source.set(map[promsource.PodKey]float64{{Namespace: ns, Pod: db.PodName(0)}: 0.9, {Namespace: ns, Pod: db.PodName(1)}: 0.9}, nil)
	for range 12 {
		cycle(g)
	}
	fetch(g, db)
	ready := findCondition(db, dbpilotv1alpha1.ConditionAutopilotReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(autopilot.ReasonStopped), ready.Message)
	g.Expect(db.Spec.Replicas).To(HaveValue(Equal(int32(2))))
	g.Expect(db.Spec.Tier).To(Equal(dbpilotv1alpha1.TierSmall))
	g.Expect(gathered(g, "dbpilot_autopilot_holding", labels)).To(BeZero(), "no hold to alert on")
	g.Expect(gathered(g, "dbpilot_database_hibernated", labels)).To(Equal(1.0))

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = false })
	waitConverged(g, db)
	g.Expect(gathered(g, "dbpilot_database_hibernated", labels)).To(BeZero())
}

// backupsOf lists the DatabaseBackups of db, by name.
func backupsOf(g Gomega, db *dbpilotv1alpha1.Database) []dbpilotv1alpha1.DatabaseBackup {
	list := &dbpilotv1alpha1.DatabaseBackupList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(db.Namespace))).To(Succeed())
	var mine []dbpilotv1alpha1.DatabaseBackup
	for _, b := range list.Items {
		if b.Spec.DatabaseName == db.Name {
			mine = append(mine, b)
		}
	}
	return mine
}
