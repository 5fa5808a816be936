package e2e_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

// TestCachedOwnedFieldsTellChanges applies a Database's StatefulSet as the
// reconciler does and passes the API server's answer through the cache
// transform: the hash it keeps instead of the managed fields must equal the
// hash of the same desired StatefulSet, differ from a changed one, and
// differ once another manager has taken one of dbpilot's fields, so the
// reconciler writes exactly when extraction would have made it write.
func TestCachedOwnedFieldsTellChanges(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "ownedfields")
	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	opts := desired.StatefulSetOptions{Images: imagecatalog.Default()}
	g.Expect(k8sClient.Apply(ctx, desired.StatefulSet(db, opts), client.FieldOwner(controllers.FieldOwner), client.ForceOwnership)).To(Succeed())

	cachedHash := func() (string, *appsv1.StatefulSet) {
		live := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.StatefulSetName()}, live)).To(Succeed())
		g.Expect(live.ManagedFields).NotTo(BeEmpty())
		out, err := controllers.TransformOwnedFields()(live)
		g.Expect(err).NotTo(HaveOccurred())
		cached := out.(*appsv1.StatefulSet)
		return cached.Annotations[controllers.OwnedFieldsHashAnnotation], cached
	}
	hashOf := func(d *dbpilotv1alpha1.Database) string {
		h, err := controllers.OwnedFieldsHash(desired.StatefulSet(d, opts))
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}

	hash, cached := cachedHash()
	g.Expect(hash).To(Equal(hashOf(db)), "an unchanged StatefulSet must not be applied again")
	g.Expect(cached.ManagedFields).To(BeNil())
	g.Expect(cached.Spec.Template.Spec.Containers).To(BeNil(), "the pod template's spec is not cached")
	g.Expect(cached.Spec.Template.Annotations).To(HaveKey(desired.AnnotationTier), "the template's annotations are read and kept")
	g.Expect(cached.Annotations).To(HaveKey(desired.AnnotationTemplateHash))
	g.Expect(cached.Spec.VolumeClaimTemplates).To(HaveLen(1), "the claim template's size is read and kept")

	bigger := db.DeepCopy()
	bigger.Spec.Tier = dbpilotv1alpha1.TierLarge
	g.Expect(hashOf(bigger)).NotTo(Equal(hash), "a changed StatefulSet must be applied")

	// Another manager takes spec.replicas with a forced apply: dbpilot no
	// longer owns it, so its desired StatefulSet differs from what it owns.
	intruder := appsv1ac.StatefulSet(db.StatefulSetName(), ns).WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(3))
	g.Expect(k8sClient.Apply(ctx, intruder, client.FieldOwner("intruder"), client.ForceOwnership)).To(Succeed())
	taken, _ := cachedHash()
	g.Expect(taken).NotTo(Equal(hashOf(db)), "a field another manager took must be taken back")

	// An object dbpilot creates rather than applies stays whole: the
	// designation is updated from its cached copy.
	designation := desired.DesignationConfigMap(db)
	g.Expect(k8sClient.Create(ctx, designation)).To(Succeed())
	out, err := controllers.TransformOwnedFields()(designation.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*corev1.ConfigMap).Annotations).NotTo(HaveKey(controllers.OwnedFieldsHashAnnotation))
	g.Expect(out.(*corev1.ConfigMap).ManagedFields).To(Equal(designation.ManagedFields))
}
