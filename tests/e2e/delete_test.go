package e2e_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestDeleteRetainKeepsData deletes a 2-pod Database with the default
// deletionPolicy Retain: the volumes and the credentials stay, labelled with
// the Database's name and free of owners; everything else goes.
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
