package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestPodForCacheKeepsWhatIsRead checks that a cached pod keeps every field
// the controllers read from pods (the containers' resources, asked and
// applied, included) and loses the rest of its spec and managed fields.
func TestPodForCacheKeepsWhatIsRead(t *testing.T) {
	deleting := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "orders-0", Namespace: "shop", UID: "u1", ResourceVersion: "7",
			Labels:            map[string]string{"dbpilot.io/role": "primary"},
			Annotations:       map[string]string{"dbpilot.io/fenced": "true"},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "StatefulSet", Name: "orders"}},
			DeletionTimestamp: &deleting,
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{Name: "database", Image: "postgres:15", Env: []corev1.EnvVar{{Name: "PGDATA", Value: "/data"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Volumes: []corev1.Volume{{Name: "data"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			PodIP:      "10.88.0.5",
			HostIP:     "10.88.0.1",
			StartTime:  &deleting,
			QOSClass:   corev1.PodQOSGuaranteed,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "database", Ready: true, RestartCount: 2, Image: "postgres:15", ImageID: "sha256:abc",
				Resources:            &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "restoring backup b1: not found"}},
			}},
		},
	}
	want := pod.ObjectMeta.DeepCopy()
	want.ManagedFields = nil

	out, err := TransformPodForCache(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if !reflect.DeepEqual(got.ObjectMeta, *want) {
		t.Errorf("metadata %+v, want %+v", got.ObjectMeta, *want)
	}
	wantSpec := corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "database", Resources: pod.Spec.Containers[0].Resources}}}
	if !reflect.DeepEqual(got.Spec, wantSpec) {
		t.Errorf("spec %+v, want only the node name and the containers' resources", got.Spec)
	}
	if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "10.88.0.5" || got.Status.HostIP != "10.88.0.1" ||
		!reflect.DeepEqual(got.Status.Conditions, pod.Status.Conditions) || got.Status.StartTime == nil {
		t.Errorf("status %+v lost phase, address, conditions or start", got.Status)
	}
	if len(got.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses %+v", got.Status.ContainerStatuses)
	}
	c := got.Status.ContainerStatuses[0]
	if c.Name != "database" || !c.Ready || c.RestartCount != 2 || c.LastTerminationState.Terminated == nil ||
		c.LastTerminationState.Terminated.Message != "restoring backup b1: not found" || !reflect.DeepEqual(c.Resources, pod.Status.ContainerStatuses[0].Resources) {
		t.Errorf("container status %+v lost what the controllers read", c)
	}
	if c.Image != "" || c.ImageID != "" || got.Status.QOSClass != "" {
		t.Errorf("container status kept its image (%q, %q) or the pod its QoS class %q", c.Image, c.ImageID, got.Status.QOSClass)
	}
}

// TestPodForCachePassesOtherObjects checks that a tombstone of a pod whose
// deletion was missed goes through untouched.
func TestPodForCachePassesOtherObjects(t *testing.T) {
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "shop/orders-0"}
	out, err := TransformPodForCache(tombstone)
	if err != nil || out != tombstone {
		t.Errorf("TransformPodForCache(tombstone) = %v, %v", out, err)
	}
}
