package e2e_test

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
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
	// No operator watches this namespace: the Database has no finalizer,
	// and the garbage collector removes what it owns.
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, db) })
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

// TestCachedOwnedFieldsMatchEveryChild applies every child dbpilot
// server-side applies, for each engine with three pods, and checks that the
// cached hash of each equals the hash of the same desired object: a
// difference in how a field encodes would make the reconciler apply it on
// every pass.
func TestCachedOwnedFieldsMatchEveryChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := restrictedNamespace(t, "ownedchildren")
	images := imagecatalog.Default()
	for _, engine := range []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.EngineMySQL} {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			db := newDatabase(ns, string(engine), engine)
			db.Spec.Replicas = ptr.To[int32](3)
			g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, db) })
			g.Expect(desired.NeedsPodDisruptionBudget(3)).To(BeTrue())
			children := []struct {
				live  client.Object
				build func() runtime.ApplyConfiguration
			}{
				{&corev1.ConfigMap{}, func() runtime.ApplyConfiguration { return desired.ConfigMap(db) }},
				{&corev1.Service{}, func() runtime.ApplyConfiguration { return desired.HeadlessService(db) }},
				{&corev1.Service{}, func() runtime.ApplyConfiguration { return desired.ReadWriteService(db) }},
				{&corev1.Service{}, func() runtime.ApplyConfiguration { return desired.ReadOnlyService(db, 3) }},
				{&appsv1.StatefulSet{}, func() runtime.ApplyConfiguration {
					return desired.StatefulSet(db, desired.StatefulSetOptions{Images: images, Partition: 1})
				}},
				{&policyv1.PodDisruptionBudget{}, func() runtime.ApplyConfiguration { return desired.PodDisruptionBudget(db, db.EffectiveReplicas()) }},
			}
			for _, child := range children {
				applied := child.build()
				g.Expect(k8sClient.Apply(ctx, applied, client.FieldOwner(controllers.FieldOwner), client.ForceOwnership)).To(Succeed())
				// The answer was decoded into applied; its name is all
				// that is read from it.
				key := client.ObjectKeyFromObject(metadataOf(g, applied))
				g.Expect(k8sClient.Get(ctx, key, child.live)).To(Succeed())
				out, err := controllers.TransformOwnedFields()(child.live)
				g.Expect(err).NotTo(HaveOccurred())
				want, err := controllers.OwnedFieldsHash(child.build())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.(client.Object).GetAnnotations()).To(HaveKeyWithValue(controllers.OwnedFieldsHashAnnotation, want),
					"%T %s: the cached hash must equal the desired object's", child.live, key.Name)
			}
		})
	}
}

// metadataOf reads the name and namespace of an apply configuration.
func metadataOf(g Gomega, config runtime.ApplyConfiguration) *metav1.PartialObjectMetadata {
	data, err := json.Marshal(config)
	g.Expect(err).NotTo(HaveOccurred())
	obj := &metav1.PartialObjectMetadata{}
	g.Expect(json.Unmarshal(data, obj)).To(Succeed())
	return obj
}
