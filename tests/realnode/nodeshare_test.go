package realnode_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podsGoneTimeout bounds the wait for a test's pods to leave the node
// after its Databases are deleted: the garbage collector removes them, and
// a pod's grace period is 120 s.
const podsGoneTimeout = 3 * time.Minute

// nodeCPU is the real node's allocatable CPU in millicores, held by the
// tests that run beside each other; read from the node on first use.
var nodeCPU = sync.OnceValues(func() (*nodeBudget, error) {
	nodes, err := clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("want one real node, found %d", len(nodes.Items))
	}
	millicores := nodes.Items[0].Status.Allocatable.Cpu().MilliValue()
	return &nodeBudget{millicores: millicores, held: semaphore.NewWeighted(millicores)}, nil
})

type nodeBudget struct {
	millicores int64
	held       *semaphore.Weighted
}

// besideOtherTests lets the test run beside other such tests (go test
// -parallel) while the node's CPU holds all their pods: it waits until
// millicores of the node's allocatable CPU are free, the most its pods
// request at once, and holds them until the test has ended (each test
// namespace waits, as the test ends, for its pods to leave the node). A
// test that stops or freezes what others use (the kubelet, the operator,
// the process's environment), needs the whole node, or judges CPU does not
// call it, and so runs alone, before the others start.
func besideOtherTests(t *testing.T, millicores int64) {
	t.Helper()
	t.Parallel()
	budget, err := nodeCPU()
	if err != nil {
		t.Fatalf("reading the node's allocatable CPU: %v", err)
	}
	if millicores > budget.millicores {
		t.Fatalf("the test's pods request %dm of CPU, the node has %dm", millicores, budget.millicores)
	}
	waited := time.Now()
	if err := budget.held.Acquire(context.Background(), millicores); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(waited); d > time.Second {
		t.Logf("waited %.0fs for %dm of the node's CPU", d.Seconds(), millicores)
	}
	// Registered first, so it runs last.
	t.Cleanup(func() { budget.held.Release(millicores) })
}

// expectPodsLeave waits up to podsGoneTimeout for the namespace to have
// no pod, and fails the test if one stays.
func expectPodsLeave(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(podsGoneTimeout)
	for {
		pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Errorf("listing the pods of %s: %v", ns, err)
			return
		}
		if len(pods.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var left []string
			for _, pod := range pods.Items {
				left = append(left, pod.Name)
			}
			t.Errorf("pods of %s still on the node %s after the test: %v", ns, podsGoneTimeout, left)
			return
		}
		time.Sleep(time.Second)
	}
}
