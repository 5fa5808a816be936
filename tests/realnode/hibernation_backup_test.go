package realnode_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestHibernationWaitsForARunningBackup hibernates a PostgreSQL Database
// while its backup runs: the S3 server is frozen (SIGSTOP), so the backup
// its instance program streams there waits. The pod keeps running, and
// Progressing names the backup, until the server runs again and the
// backup completes; only then does the pod stop, and the backup restores.
func TestHibernationWaitsForARunningBackup(t *testing.T) {
	t.Parallel()
	waitForLateTool(t, "versitygw")
	holdNodeCPUAndMore(t, 500) // one small pod; the restored one asks for its own
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-hibernate-backup"
	tc := replicationEngines[0]
	restrictedNamespace(t, ns)
	server := startS3(t, g, ns)
	db := writableDatabase(t, g, ns, tc, tc.create, 1, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "0 0 1 1 *",
			Destination: &dbpilotv1alpha1.BackupDestination{S3: &dbpilotv1alpha1.S3Destination{
				Endpoint: server.Endpoint, Bucket: "backups", CredentialsSecretName: "s3-credentials"}}}
	})
	pod := db.PodName(0)

	g.Expect(server.Freeze()).To(Succeed())
	t.Cleanup(func() { _ = server.Thaw() })
	backup := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before-hibernation"},
		Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: db.Name}}
	g.Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
		g.Expect(backup.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseRunning))
		g.Expect(backup.Status.Instance).To(Equal(pod))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())

	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Hibernate = true })
	asked := time.Now()
	waiting := "waiting for backup " + backup.Name + " to finish on " + pod
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		progressing := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Reason).To(Equal(dbpilotv1alpha1.ReasonHibernating))
		g.Expect(progressing.Message).To(ContainSubstring(waiting))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
	// The store hangs for as long as it is frozen: the pod runs on.
	g.Consistently(func(g Gomega) {
		g.Expect(podsByName(g, db)).To(HaveKeyWithValue(pod, WithTransform(func(p corev1.Pod) bool { return podIsReady(&p) }, BeTrue())), "the pod stopped under a running backup")
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
		g.Expect(backup.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseRunning))
	}, 10*time.Second, time.Second).Should(Succeed())

	g.Expect(server.Thaw()).To(Succeed())
	thawed := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
		g.Expect(backup.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseCompleted), "%+v", backup.Status)
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseHibernated))
		g.Expect(podsByName(g, db)).To(BeEmpty())
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return eventNotes(ns) })
	t.Logf("hibernation held %.1fs for the backup; stopped %.1fs after the store ran again", thawed.Sub(asked).Seconds(), time.Since(thawed).Seconds())

	// The backup the hibernation waited for restores.
	restoreAndExpect(t, g, db, tc, "restored", &dbpilotv1alpha1.FromBackup{DatabaseBackupName: backup.Name}, 1000*1001/2)
}
