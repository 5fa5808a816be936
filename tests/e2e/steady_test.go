package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// steadyWindow is how long a converged operator is watched for writes.
const steadyWindow = 60 * time.Second

// quietPeriod is how long nothing may change before the steady window
// starts.
const quietPeriod = 5 * time.Second

// TestRestartAndSteadyStateWriteNothing converges three Databases, restarts
// the operator (as an upgrade would), and checks that the new operator
// changes no pod template, no Secret and no object at all, and sends zero
// write requests to the API server over a minute.
func TestRestartAndSteadyStateWriteNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := restrictedNamespace(t, "steady")
	first := startOperator(t, ns)

	dbs := convergedPerEngine(g, ns)

	first.stop(t)
	// What the first operator's last writes set off (the StatefulSet and
	// disruption controllers' status writes) settles before the second
	// starts: the versions it is judged by hold still for a while.
	var before map[string]string
	g.Eventually(func(g Gomega) {
		before = resourceVersions(g, ns)
		time.Sleep(quietPeriod)
		g.Expect(resourceVersions(g, ns)).To(Equal(before))
	}, convergeTimeout, pollInterval).Should(Succeed())
	second := startOperator(t, ns)
	time.Sleep(steadyWindow)

	g.Expect(second.writes.Load()).To(BeZero(), "write requests by the restarted operator in %s: %v", steadyWindow, second.writeRequests())
	g.Expect(resourceVersions(g, ns)).To(Equal(before), "no object changed after the restart")
	for _, db := range dbs {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
	}
}

// resourceVersions maps every object of the Database children's kinds in the
// namespace to its resourceVersion.
func resourceVersions(g Gomega, namespace string) map[string]string {
	versions := map[string]string{}
	lists := map[string]client.ObjectList{
		"Database":    &dbpilotv1alpha1.DatabaseList{},
		"StatefulSet": &appsStatefulSetList{},
		"Service":     &corev1.ServiceList{},
		"ConfigMap":   &corev1.ConfigMapList{},
		"Secret":      &corev1.SecretList{},
		"Pod":         &corev1.PodList{},
		"PVC":         &corev1.PersistentVolumeClaimList{},
		"PDB":         &policyPDBList{},
	}
	for kind, list := range lists {
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
		items, err := metaItems(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, item := range items {
			versions[kind+"/"+item.GetName()] = item.GetResourceVersion()
		}
	}
	return versions
}
