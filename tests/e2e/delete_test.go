package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestDeleteRetainKeepsData deletes a 2-pod Database with the default
// deletionPolicy Retain: the volumes and the credentials stay, labelled with
// the Database's name and free of owners; everything else goes. The
// designation stays too, and a Database created again adopts it.
func TestDeleteRetainKeepsData(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "retain")
	startOperator(t, ns)

	db := newDatabase(ns, "archive", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())

	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "Database is gone")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.StatefulSetName()}, &appsStatefulSet{}))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "StatefulSet is garbage-collected")

	for _, name := range []string{claimName(db, 0), claimName(db, 1)} {
		claim := &corev1.PersistentVolumeClaim{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim)).To(Succeed(), "volume %s is kept", name)
		g.Expect(claim.DeletionTimestamp).To(BeNil())
		g.Expect(claim.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, "archive"))
		g.Expect(claim.OwnerReferences).To(BeEmpty())
	}
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "archive-credentials"}, secret)).To(Succeed(), "credentials are kept")
	g.Expect(secret.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, "archive"))
	g.Expect(secret.OwnerReferences).To(BeEmpty())
	replication := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "archive-replication"}, replication)).To(Succeed(), "the replication password is kept")
	g.Expect(replication.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, "archive"))
	g.Expect(replication.OwnerReferences).To(BeEmpty())
	authority := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "archive-ca"}, authority)).To(Succeed(), "the certificate authority clients trust is kept")
	g.Expect(authority.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, "archive"))
	g.Expect(authority.OwnerReferences).To(BeEmpty())
	designation := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "archive-primary"}, designation)).To(Succeed(), "the designation is kept")
	g.Expect(designation.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, "archive"))
	g.Expect(designation.OwnerReferences).To(BeEmpty())

	// As if a failover had moved the primary before the deletion: a
	// Database created again on the volumes adopts the designation, and
	// the primary stays where the data says.
	designation.Data[layout.KeyPrimary], designation.Data[layout.KeyEpoch] = "archive-1", "3"
	g.Expect(k8sClient.Update(ctx, designation)).To(Succeed())
	again := newDatabase(ns, "archive", dbpilotv1alpha1.EnginePostgres)
	again.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, again)).To(Succeed())
	waitConverged(g, again)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(designation), designation)).To(Succeed())
		g.Expect(designation.Data).To(Equal(map[string]string{layout.KeyPrimary: "archive-1", layout.KeyEpoch: "3"}))
		g.Expect(designation.OwnerReferences).To(ConsistOf(HaveField("UID", again.UID)))
		g.Expect(designation.Labels).NotTo(HaveKey(dbpilotv1alpha1.LabelRetainedFrom))
		for _, pod := range podsOf(g, again) {
			want := dbpilotv1alpha1.RoleReplica
			if pod.Name == "archive-1" {
				want = dbpilotv1alpha1.RolePrimary
			}
			g.Expect(pod.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, want), pod.Name)
		}
		// Clients keep trusting the Database created again.
		serverCertificate(g, again, authority.Data[layout.KeyCACert])
	}, convergeTimeout, pollInterval).Should(Succeed())
}

// TestDeleteDeleteRemovesData deletes a Database with deletionPolicy Delete:
// the finalizer holds it until its volumes are gone.
func TestDeleteDeleteRemovesData(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "delete")
	startOperator(t, ns)

	db := newDatabase(ns, "scratch", dbpilotv1alpha1.EngineMariaDB)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.DeletionPolicy = dbpilotv1alpha1.DeletionPolicyDelete
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	g.Expect(claimNames(g, db)).To(HaveLen(2))
	g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())

	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "Database is gone")
	// Terminating claims are still listed: an empty list right after the
	// Database vanished shows the finalizer waited for them.
	g.Expect(claimNames(g, db)).To(BeEmpty(), "volumes were gone before the Database")
}

// TestRecreatedWaitsForPredecessor creates a Database while a deleted
// Database of the same name still owns its designation (held here by a
// finalizer, as a slow garbage collector would): the new Database says
// it waits and creates nothing, then, once the old designation is gone,
// starts with a designation of its own.
func TestRecreatedWaitsForPredecessor(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "predecessor")
	startOperator(t, ns)

	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres)
	const hold = "dbpilot.io/test-hold"
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: db.DesignationConfigMapName(), Finalizers: []string{hold},
		Labels: map[string]string{dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue, dbpilotv1alpha1.LabelDatabase: db.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: dbpilotv1alpha1.GroupVersion.String(), Kind: "Database", Name: db.Name,
			UID: uuid.NewUUID(), Controller: ptr.To(true)}},
	}, Data: map[string]string{layout.KeyPrimary: db.Name + "-2", layout.KeyEpoch: "7"}}
	g.Expect(k8sClient.Create(ctx, stale)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())

	g.Eventually(func(g Gomega) {
		fetch(g, db)
		progressing := findCondition(db, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Reason).To(Equal(dbpilotv1alpha1.ReasonWaitingForPredecessor))
		g.Expect(progressing.Message).To(ContainSubstring("ConfigMap " + db.DesignationConfigMapName()))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.StatefulSetName()}, &appsStatefulSet{}))
	}, 3*time.Second, pollInterval).Should(BeTrue(), "no StatefulSet while the predecessor's designation lingers")

	g.Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(stale), stale); err != nil {
			return err
		}
		stale.Finalizers = nil
		return k8sClient.Update(ctx, stale)
	}, 10*time.Second, pollInterval).Should(Succeed())
	waitConverged(g, db)
	designation := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stale), designation)).To(Succeed())
	g.Expect(designation.UID).NotTo(Equal(stale.UID))
	g.Expect(metav1.IsControlledBy(designation, db)).To(BeTrue())
	g.Expect(designation.Data[layout.KeyPrimary]).To(Equal(db.Name+"-0"), "the new Database's first designation, not the predecessor's")
}
