package e2e_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestControlPlaneRestarts restarts kube-apiserver, and then etcd, while
// the operator has changes under way, and checks that it rides them out
// without being restarted: every change made before, during and after the
// faults converges. It is not parallel: the restarts would break the other
// tests' requests, and Go runs it before any parallel test.
func TestControlPlaneRestarts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "control-plane-faults")
	op := startOperator(t, ns)

	dbs := convergedPerEngine(g, ns)

	// Changes under way when the API server goes down.
	update(g, dbs[0], func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](3) })
	update(g, dbs[1], func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierMedium })
	down, err := cluster.Restart(ctx, "kube-apiserver")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("kube-apiserver restarted: %.1fs without an API server", down.Seconds())

	// And when etcd goes down under the API server.
	update(g, dbs[2], func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](3) })
	versions := watchVersions(t, g, dbs[0])
	update(g, dbs[0], func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierLarge })
	tierChanged := dbs[0].Generation
	down, err = cluster.Restart(ctx, "etcd")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("etcd restarted: %.1fs until the API server was ready again", down.Seconds())

	// A change after both.
	late := newDatabase(ns, "late", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, late)).To(Succeed())
	for _, db := range append(dbs, late) {
		waitConverged(g, db)
	}
	g.Expect(*statefulSetOf(g, dbs[0]).Spec.Replicas).To(Equal(int32(3)))
	g.Expect(dbs[0].Status.Tier).To(Equal(dbpilotv1alpha1.TierLarge))
	// Not even for a moment, while the operator's cache caught up after
	// etcd came back, did the status claim the tier change done early.
	expectNoEarlyClaim(g, versions(), tierChanged, dbpilotv1alpha1.TierLarge)
	g.Expect(dbs[1].Status.Tier).To(Equal(dbpilotv1alpha1.TierMedium))
	g.Expect(*statefulSetOf(g, dbs[2]).Spec.Replicas).To(Equal(int32(3)))
	select {
	case err := <-op.done:
		t.Fatalf("the operator stopped during the faults: %v", err)
	default:
	}
}
