package realnode_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podsGoneTimeout bounds the wait for a test's pods to leave the node
// after its Databases are deleted: the garbage collector removes them, and
// a pod's grace period is 120 s.
const podsGoneTimeout = 3 * time.Minute

// testsAtOnce is how many tests share the node at once: two, so that the
// host's 2 cores keep up with their writers, the operator and the control
// plane (go test's -parallel only needs to be at least the number of tests
// that call besideOtherTests, which wait for their turn here).
const testsAtOnce = 2

// nodeCPU is the real node's allocatable CPU, shared by the tests that run
// beside each other; read from the node on first use.
var nodeCPU = sync.OnceValues(func() (*nodeBudget, error) {
	nodes, err := clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("want one real node, found %d", len(nodes.Items))
	}
	millicores := nodes.Items[0].Status.Allocatable.Cpu().MilliValue()
	b := &nodeBudget{millicores: millicores, free: millicores}
	b.changed = sync.NewCond(&b.mu)
	return b, nil
})

// nodeBudget admits tests while fewer than testsAtOnce run and the CPU
// their pods request fits the node. A waiting test never holds a turn nor
// CPU, so a test that does not fit yet lets the others pass.
type nodeBudget struct {
	millicores int64

	mu      sync.Mutex
	changed *sync.Cond
	free    int64
	running int
	// growing counts running tests waiting for more CPU: they come
	// before new tests.
	growing int
	// growers counts running tests that may ask for more CPU: one at a
	// time runs, so that two never wait for each other's.
	growers int
}

func (b *nodeBudget) admit(millicores int64, mayGrow bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.running >= testsAtOnce || b.free < millicores || b.growing > 0 || mayGrow && b.growers > 0 {
		b.changed.Wait()
	}
	b.running++
	b.free -= millicores
	if mayGrow {
		b.growers++
	}
}

func (b *nodeBudget) leave(millicores int64, mayGrow bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running--
	b.free += millicores
	if mayGrow {
		b.growers--
	}
	b.changed.Broadcast()
}

func (b *nodeBudget) grow(millicores int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.growing++
	for b.free < millicores {
		b.changed.Wait()
	}
	b.growing--
	b.free -= millicores
	b.changed.Broadcast()
}

func (b *nodeBudget) shrink(millicores int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += millicores
	b.changed.Broadcast()
}

// besideOtherTests lets the test run beside another such test while the
// node's CPU holds the pods of both (see holdNodeCPU). A test that stops or
// freezes what others use (the kubelet, the operator, the process's
// environment), needs the whole node, or judges CPU does not call it, and
// so runs alone, before the others start.
func besideOtherTests(t *testing.T, millicores int64) {
	t.Helper()
	t.Parallel()
	holdNodeCPU(t, millicores)
}

// holdNodeCPU waits, in a test that called t.Parallel, until fewer than
// testsAtOnce tests run and millicores of the node's allocatable CPU are
// free, the most its pods request at once, and holds them until the test
// has ended (each test namespace waits, as the test ends, for its pods to
// leave the node).
func holdNodeCPU(t *testing.T, millicores int64) {
	t.Helper()
	holdNodeCPUFor(t, millicores, false)
}

// holdNodeCPUAndMore is holdNodeCPU for a test that asks for more for a
// while (moreNodeCPU): it runs beside tests that do not.
func holdNodeCPUAndMore(t *testing.T, millicores int64) {
	t.Helper()
	holdNodeCPUFor(t, millicores, true)
}

func holdNodeCPUFor(t *testing.T, millicores int64, mayGrow bool) {
	t.Helper()
	budget := budgetFor(t, millicores)
	waited := time.Now()
	budget.admit(millicores, mayGrow)
	if d := time.Since(waited); d > time.Second {
		t.Logf("waited %.0fs for its turn and %dm of the node's CPU", d.Seconds(), millicores)
	}
	// Registered first, so it runs last.
	t.Cleanup(func() { budget.leave(millicores, mayGrow) })
}

// moreNodeCPU waits, in a test that holds the node's CPU through
// holdNodeCPUAndMore, for millicores more (before the running tests' next
// turn), for a pod that runs for a while only, and returns what gives them
// back: call it once the pod has left the node. If the test ends first,
// they are given back then, after the cleanups registered after this call.
func moreNodeCPU(t *testing.T, millicores int64) (giveBack func()) {
	t.Helper()
	budget := budgetFor(t, millicores)
	waited := time.Now()
	budget.grow(millicores)
	if d := time.Since(waited); d > time.Second {
		t.Logf("waited %.0fs for %dm more of the node's CPU", d.Seconds(), millicores)
	}
	giveBack = sync.OnceFunc(func() { budget.shrink(millicores) })
	t.Cleanup(giveBack)
	return giveBack
}

func budgetFor(t *testing.T, millicores int64) *nodeBudget {
	t.Helper()
	budget, err := nodeCPU()
	if err != nil {
		t.Fatalf("reading the node's allocatable CPU: %v", err)
	}
	if millicores > budget.millicores {
		t.Fatalf("the test's pods request %dm of CPU, the node has %dm", millicores, budget.millicores)
	}
	return budget
}

// expectPodsLeave waits up to podsGoneTimeout for the namespace's pods
// that match selector (all of them when it is empty) to leave the node,
// and fails if one stays.
func expectPodsLeave(g Gomega, ns string, selector map[string]string) {
	g.Eventually(func(g Gomega) []string {
		pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
		g.Expect(err).NotTo(HaveOccurred())
		var left []string
		for _, pod := range pods.Items {
			left = append(left, pod.Name)
		}
		return left
	}, podsGoneTimeout, time.Second).Should(BeEmpty(), "pods of %s still on the node", ns)
}
