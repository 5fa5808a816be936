package e2e_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestADrainWaitsForThePrimaryToMove puts a two-pod PostgreSQL Database on
// a two-node pool of the test's own. The primary's pod is under a budget
// of its own, which refuses its eviction, and the replica's under another;
// cordoning the primary's node (as `kubectl drain` does first) makes the
// operator look for a replica on another node to hand the primary to:
// kwok runs no instance program, so none reports it can, and Progressing
// says the eviction waits (Draining), as does dbpilot_primary_drain_waiting,
// until the node is uncordoned. The replica's eviction goes through.
func TestADrainWaitsForThePrimaryToMove(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "drain")
	startOperator(t, ns)
	pool := "e2e-drain-pool"
	nodePool(t, pool, 2)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Scheduling = onePodPerNodeOf(pool)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	primary, replica := db.PodName(0), db.PodName(1)

	// Two budgets with selectors apart: a pod under both could not be
	// evicted at all.
	budget := func(name string) *policyv1.PodDisruptionBudget {
		pdb, err := clientset.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return pdb
	}
	g.Expect(budget(db.PodDisruptionBudgetName()).Spec.Selector.MatchLabels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RoleReplica))
	g.Expect(budget(db.PrimaryPodDisruptionBudgetName()).Spec.Selector.MatchLabels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RolePrimary))
	g.Eventually(func(g Gomega) {
		for _, name := range []string{db.PodDisruptionBudgetName(), db.PrimaryPodDisruptionBudgetName()} {
			pdb, err := clientset.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
			g.Expect(pdb.Status.ExpectedPods).To(Equal(int32(1)), "budget %s covers one pod", name)
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
	evict := func(pod string) error {
		return clientset.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
	}
	err := evict(primary)
	g.Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "evicting the primary: %v", err)

	pod := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: primary}, pod)).To(Succeed())
	node := pod.Spec.NodeName
	cordon := func(unschedulable bool) {
		patch := []byte(`{"spec":{"unschedulable":` + map[bool]string{true: "true", false: "null"}[unschedulable] + `}}`)
		_, err := clientset.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	cordon(true)
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		progressing := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Reason).To(Equal(dbpilotv1alpha1.ReasonDraining))
		g.Expect(progressing.Message).To(ContainSubstring("the primary " + primary + "'s node " + node + " is being drained"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	err = evict(primary)
	g.Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "evicting the primary of a drained node before it moved: %v", err)
	waiting := map[string]string{"namespace": ns, "database": db.Name, "node": node}
	g.Expect(gathered(g, "dbpilot_primary_drain_waiting", waiting)).To(Equal(1.0), "the PrimaryDrainBlocked alert's series")

	cordon(false)
	waitConverged(g, db)
	g.Eventually(func(g Gomega) {
		g.Expect(gathered(g, "dbpilot_primary_drain_waiting", map[string]string{"namespace": ns, "database": db.Name})).To(BeZero())
	}, convergeTimeout, pollInterval).Should(Succeed(), "the series gone once the node is uncordoned")
	g.Expect(evict(replica)).To(Succeed(), "the replica's eviction")
}
