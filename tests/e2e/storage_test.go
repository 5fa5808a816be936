package e2e_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// TestStorageGrowsEveryClaim grows spec.storage.size on a 2-pod Database and
// checks every claim asks for the new size (the StorageClass allows
// expansion) while the immutable claim template is left alone.
func TestStorageGrowsEveryClaim(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "grow")
	startOperator(t, ns)

	db := newDatabase(ns, "events", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Storage.Size = ptr.To(resource.MustParse("3Gi")) })
	g.Eventually(func(g Gomega) {
		for _, ordinal := range []int{0, 1} {
			claim := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName(db, ordinal)}, claim)).To(Succeed())
			g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("3Gi"), "claim %s", claim.Name)
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
	template := statefulSetOf(g, db).Spec.VolumeClaimTemplates[0]
	g.Expect(template.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"), "claim template unchanged")
	waitConverged(g, db)
}

// TestStorageGrowthNeedsAnExpandableClass grows a Database whose
// StorageClass forbids expansion: the claims keep their size and the
// Database is Degraded with a reason naming the problem, and an Event.
func TestStorageGrowthNeedsAnExpandableClass(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "fixed")
	startOperator(t, ns)
	class := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "fixed-size"},
		Provisioner:          localcluster.ProvisionerName,
		AllowVolumeExpansion: ptr.To(false),
	}
	g.Expect(k8sClient.Create(ctx, class)).To(Succeed())

	db := newDatabase(ns, "fixed", dbpilotv1alpha1.EngineMariaDB)
	db.Spec.Storage.StorageClassName = ptr.To("fixed-size")
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi")) })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonVolumeNotExpandable))
		g.Expect(degraded.Message).To(ContainSubstring(claimName(db, 0)))
		g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonDegraded))
	}, convergeTimeout, pollInterval).Should(Succeed())
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName(db, 0)}, claim)).To(Succeed())
	g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
}
