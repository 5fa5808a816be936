package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// zones spread the fake nodes so topology spread constraints have something
// to spread over.
var zones = []string{"zone-a", "zone-b", "zone-c"}

// fakeNode is a node with the capacity of a mid-sized cloud machine.
func fakeNode(i int) *corev1.Node {
	name := fmt.Sprintf("kwok-node-%d", i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname":      name,
				"kubernetes.io/os":            "linux",
				"kubernetes.io/arch":          "amd64",
				"topology.kubernetes.io/zone": zones[i%len(zones)],
				"type":                        "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// ensureNodes creates the fake nodes that do not exist yet.
func ensureNodes(ctx context.Context, clientset kubernetes.Interface, n int) error {
	for i := range n {
		_, err := clientset.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node %d: %w", i, err)
		}
	}
	return nil
}
