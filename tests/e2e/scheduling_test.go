package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// poolLabel marks the nodes of a test's own node pool, and is the key of
// the taint that keeps every other pod off them.
const poolLabel = "e2e.dbpilot.io/pool"

// nodePool creates n fake nodes of a pool of the test's own, labelled and
// tainted with poolLabel=pool (NoSchedule), and deletes them in cleanup.
func nodePool(t *testing.T, pool string, n int) []string {
	t.Helper()
	return nodePoolOfCPU(t, pool, n, "32")
}

// nodePoolOfCPU is nodePool whose nodes each have cpu to give.
func nodePoolOfCPU(t *testing.T, pool string, n int, cpu string) []string {
	t.Helper()
	ctx := context.Background()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", pool, i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{
					corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
					"type": "kwok", poolLabel: pool,
				},
			},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: poolLabel, Value: pool, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = clientset.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		names = append(names, name)
	}
	return names
}

// onePodPerNodeOf is the scheduling of a Database whose pods run on the
// nodes of pool (nodePool's), one on each.
func onePodPerNodeOf(pool string) *dbpilotv1alpha1.SchedulingSpec {
	return &dbpilotv1alpha1.SchedulingSpec{
		NodeSelector:    map[string]dbpilotv1alpha1.LabelValue{poolLabel: dbpilotv1alpha1.LabelValue(pool)},
		Tolerations:     []dbpilotv1alpha1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: dbpilotv1alpha1.LabelValue(pool), Effect: corev1.TaintEffectNoSchedule}},
		PodAntiAffinity: &dbpilotv1alpha1.PodAntiAffinitySpec{Type: dbpilotv1alpha1.PodAntiAffinityRequired, TopologyKey: corev1.LabelHostname},
	}
}

// TestSchedulingPlacesPodsAndSaysWhyNot gives a Database a node pool of its
// own: spec.scheduling's node selector and toleration put its pods there,
// a required anti-affinity one on each node, and they carry
// spec.podMetadata's labels and annotations. A third pod, with no node left,
// stays Pending and the Database says why in the scheduler's words, while
// the first two keep serving. A PriorityClass that does not exist is
// refused with the field's name, and the pods keep their spec (a roll
// would have left pods the API server refuses to create); once it exists,
// the pods roll to it.
func TestSchedulingPlacesPodsAndSaysWhyNot(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "scheduling")
	startOperator(t, ns)
	pool := nodePool(t, "e2e-scheduling-pool", 2)

	db := newDatabase(ns, "placed", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Scheduling = onePodPerNodeOf("e2e-scheduling-pool")
	db.Spec.PodMetadata = &dbpilotv1alpha1.PodMetadata{
		Labels:      map[string]dbpilotv1alpha1.LabelValue{"team": "orders"},
		Annotations: map[string]dbpilotv1alpha1.AnnotationValue{"example.com/note": "placed by the pool's rules"},
	}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	nodes := map[string]string{}
	for _, pod := range podsOf(g, db) {
		g.Expect(pool).To(ContainElement(pod.Spec.NodeName), "pod %s runs in the Database's pool", pod.Name)
		g.Expect(pod.Labels).To(And(HaveKeyWithValue("team", "orders"), HaveKeyWithValue(dbpilotv1alpha1.LabelDatabase, db.Name)), "pod %s has the user's labels beside dbpilot's", pod.Name)
		g.Expect(pod.Annotations).To(HaveKeyWithValue("example.com/note", "placed by the pool's rules"), "pod %s", pod.Name)
		nodes[pod.Spec.NodeName] = pod.Name
	}
	g.Expect(nodes).To(HaveLen(2), "one pod on each node")
	before := podUIDs(g, db)

	// No node is left for a third pod.
	update(g, db, func(d *dbpilotv1alpha1.Database) { d.Spec.Replicas = ptr.To[int32](3) })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		progressing := findCondition(db, dbpilotv1alpha1.ConditionProgressing)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Message).To(And(ContainSubstring("the scheduler cannot place "+db.PodName(2)+": "), ContainSubstring("anti-affinity")))
		g.Expect(db.Status.ReadyReplicas).To(BeEquivalentTo(2))
		g.Expect(apimeta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)).To(BeTrue(), "the primary serves")
	}, convergeTimeout, pollInterval).Should(Succeed())
	t.Logf("while a pod waits: %s", findCondition(db, dbpilotv1alpha1.ConditionProgressing).Message)
	update(g, db, func(d *dbpilotv1alpha1.Database) { d.Spec.Replicas = ptr.To[int32](2) })
	waitConverged(g, db)

	// A PriorityClass that does not exist changes nothing but the status.
	priority := "e2e-scheduling-databases"
	update(g, db, func(d *dbpilotv1alpha1.Database) { d.Spec.Scheduling.PriorityClassName = priority })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonSchedulingInvalid))
		g.Expect(degraded.Message).To(ContainSubstring("spec.scheduling.priorityClassName: PriorityClass " + priority + " does not exist"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(statefulSetOf(g, db).Spec.Template.Spec.PriorityClassName).To(BeEmpty())
		pods := podsOf(g, db)
		g.Expect(pods).To(HaveLen(2))
		for _, pod := range pods {
			g.Expect(before).To(HaveKeyWithValue(pod.Name, string(pod.UID)), "pod %s is the one it was", pod.Name)
		}
	}, 5*time.Second, pollInterval).Should(Succeed())

	class := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priority}, Value: 100000}
	g.Expect(k8sClient.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), class) })
	began := time.Now()
	waitConvergedWithin(g, db, convergeTimeout+time.Minute)
	g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	for _, pod := range podsOf(g, db) {
		g.Expect(pod.Spec.PriorityClassName).To(Equal(priority), "pod %s", pod.Name)
		g.Expect(pod.Spec.Priority).To(HaveValue(BeEquivalentTo(100000)), "pod %s", pod.Name)
		g.Expect(pool).To(ContainElement(pod.Spec.NodeName), "pod %s stays in the pool", pod.Name)
	}
	t.Logf("rolled to the PriorityClass %.1fs after it was created", time.Since(began).Seconds())
}
