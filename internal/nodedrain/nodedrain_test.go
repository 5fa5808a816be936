package nodedrain_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbpilot/dbpilot/internal/nodedrain"
)

func TestDraining(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.NodeSpec
		want bool
	}{
		{"schedulable", corev1.NodeSpec{}, false},
		{"another taint", corev1.NodeSpec{Taints: []corev1.Taint{{Key: "pool", Value: "databases", Effect: corev1.TaintEffectNoSchedule}}}, false},
		{"cordoned", corev1.NodeSpec{Unschedulable: true}, true},
		{"to be removed by the cluster autoscaler", corev1.NodeSpec{Taints: []corev1.Taint{{Key: nodedrain.ClusterAutoscalerDeletionTaint, Value: "1732770000", Effect: corev1.TaintEffectNoSchedule}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodedrain.Draining(&corev1.Node{Spec: tc.spec}); got != tc.want {
				t.Errorf("Draining = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTransformForCacheKeepsWhatDrainingReads(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "42", Labels: map[string]string{"pool": "databases"}},
		Spec:       corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.244.0.0/24"},
		Status:     corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"postgres:15"}, SizeBytes: 1 << 30}}},
	}
	out, err := nodedrain.TransformForCache(node)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*corev1.Node)
	if trimmed.Name != "node-a" || trimmed.ResourceVersion != "42" || !nodedrain.Draining(trimmed) {
		t.Errorf("the trimmed node lost what is read: %+v", trimmed)
	}
	if len(trimmed.Status.Images) != 0 || trimmed.Spec.PodCIDR != "" || trimmed.Labels != nil {
		t.Errorf("the trimmed node keeps what is never read: %+v", trimmed)
	}
}
