package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
)

// TestOneDesignationWinsARace creates the designation the operator makes
// for a new Database (ordinal 0, epoch 1), then lets two deciders that read
// the same designation (two operators, or one and its restarted self) move
// it to different replicas at once against the real API server: exactly
// one move succeeds, the other gets a Conflict, and the operator labels
// only the winner primary.
func TestOneDesignationWinsARace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "designation")
	startOperator(t, ns)
	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](3)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.DesignationConfigMapName()}, cm)).To(Succeed())
	read, err := designation.Read(cm.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read.Primary).To(Equal(db.PodName(0)))
	g.Expect(read.Epoch).To(Equal(int64(1)))

	candidates := []string{db.PodName(1), db.PodName(2)}
	errs := make([]error, len(candidates))
	var wg sync.WaitGroup
	for i, candidate := range candidates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = designation.Move(ctx, k8sClient, read, candidate, designation.ReasonFailover, time.Now(), time.Now())
		}()
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		if err == nil {
			g.Expect(winner).To(BeEmpty(), "two moves succeeded")
			winner = candidates[i]
			continue
		}
		g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "the losing move: %v", err)
	}
	g.Expect(winner).NotTo(BeEmpty(), "no move succeeded: %v", errs)
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{layout.KeyPrimary: winner, layout.KeyEpoch: "2"}))
	_, err = designation.Move(ctx, k8sClient, read, db.PodName(0), designation.ReasonFailover, time.Now(), time.Now())
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a move from a stale read: %v", err)

	g.Eventually(func(g Gomega) {
		for _, pod := range podsOf(g, db) {
			want := dbpilotv1alpha1.RoleReplica
			if pod.Name == winner {
				want = dbpilotv1alpha1.RolePrimary
			}
			g.Expect(pod.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, want), "pod %s", pod.Name)
		}
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}
