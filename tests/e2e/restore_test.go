package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestRestoreWaitsForItsBackup creates a Database restored from a
// DatabaseBackup that does not exist yet: no pod is created and
// Progressing says what it waits for. Once the DatabaseBackup has
// Completed, the source is resolved once into the Database's annotation and
// the pods restore it (RESTORE env, the source's credentials mounted
// read-only). A Database restored from a destination and a backup name
// needs no DatabaseBackup.
func TestRestoreWaitsForItsBackup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "restore")
	startOperator(t, ns)

	db := newDatabase(ns, "copy", dbpilotv1alpha1.EnginePostgres)
	target := metav1.NewTime(time.Date(2026, 11, 23, 4, 30, 0, 0, time.UTC))
	db.Spec.Bootstrap = &dbpilotv1alpha1.BootstrapSpec{FromBackup: &dbpilotv1alpha1.FromBackup{DatabaseBackupName: "nightly", TargetTime: &target}}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		cond := findCondition(db, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(dbpilotv1alpha1.ReasonWaitingForBackup))
		g.Expect(cond.Message).To(ContainSubstring("no DatabaseBackup named nightly"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, keyOf(db), &appsStatefulSet{}))
	}, 3*time.Second, pollInterval).Should(BeTrue(), "no pod before the backup is known")

	// The DatabaseBackup completes (written here as the backup controller
	// would, since no instance runs on kwok nodes).
	backup := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: "orders"}}
	g.Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	g.Eventually(func() error {
		if err := k8sClient.Get(ctx, keyOf(backup), backup); err != nil {
			return err
		}
		backup.Status = dbpilotv1alpha1.DatabaseBackupStatus{Phase: dbpilotv1alpha1.BackupPhaseCompleted, Engine: dbpilotv1alpha1.EnginePostgres,
			BackupName: "nightly-1a2b3c4d", Destination: &dbpilotv1alpha1.BackupDestination{S3: &dbpilotv1alpha1.S3Destination{
				Bucket: "backups", Prefix: ns + "/orders", CredentialsSecretName: "s3-credentials"}}}
		return k8sClient.Status().Update(ctx, backup)
	}, convergeTimeout, pollInterval).Should(Succeed(), "the backup controller writes the status too")

	sts := &appsStatefulSet{}
	g.Eventually(func() error { return k8sClient.Get(ctx, keyOf(db), sts) }, convergeTimeout, pollInterval).Should(Succeed())
	fetch(g, db)
	g.Expect(db.Annotations).To(HaveKey(dbpilotv1alpha1.AnnotationRestoreSource))
	var source layout.RestoreSource
	for _, env := range sts.Spec.Template.Spec.Containers[0].Env {
		if env.Name == layout.RestoreSourceEnv {
			g.Expect(json.Unmarshal([]byte(env.Value), &source)).To(Succeed())
		}
	}
	g.Expect(source.Backup).To(Equal("nightly-1a2b3c4d"))
	g.Expect(source.Target.S3).NotTo(BeNil())
	g.Expect(source.Target.S3.Prefix).To(Equal(ns + "/orders"))
	g.Expect(source.Target.S3.CredentialsDir).To(Equal(layout.RestoreCredentialsDir))
	g.Expect(source.TargetTime.Equal(target.Time)).To(BeTrue())
	mounted := false
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.MountPath == layout.RestoreCredentialsDir {
			mounted = m.ReadOnly
		}
	}
	g.Expect(mounted).To(BeTrue(), "the restore source's credentials are mounted read-only")

	// The source resolved once: deleting the DatabaseBackup changes no pod.
	hash := sts.Annotations[desired.AnnotationTemplateHash]
	g.Expect(k8sClient.Delete(ctx, backup)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, keyOf(db), sts)).To(Succeed())
		g.Expect(sts.Annotations[desired.AnnotationTemplateHash]).To(Equal(hash))
	}, 3*time.Second, pollInterval).Should(Succeed())

	direct := newDatabase(ns, "direct", dbpilotv1alpha1.EnginePostgres)
	direct.Spec.Bootstrap = &dbpilotv1alpha1.BootstrapSpec{FromBackup: &dbpilotv1alpha1.FromBackup{BackupName: "orders-20261123030000-9f8e7d6c",
		Destination: &dbpilotv1alpha1.BackupDestination{Volume: &dbpilotv1alpha1.VolumeDestination{ClaimName: "orders-backups"}}}}
	g.Expect(k8sClient.Create(ctx, direct)).To(Succeed())
	g.Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(direct), sts) }, convergeTimeout, pollInterval).Should(Succeed())
	claimMounted := false
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "orders-backups" {
			claimMounted = v.PersistentVolumeClaim.ReadOnly
		}
	}
	g.Expect(claimMounted).To(BeTrue(), "the restore source's claim is mounted read-only")
}
