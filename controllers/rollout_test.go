package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbpilot/dbpilot/controllers/desired"
)

func liveStatefulSet(hash string, partition int32, status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: 2, Annotations: map[string]string{desired.AnnotationTemplateHash: hash}},
		Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)},
		}},
		Status: status,
	}
}

func TestRolloutPartition(t *testing.T) {
	settled := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "a", UpdateRevision: "a", ReadyReplicas: 3, UpdatedReplicas: 3}
	replicasRolling := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "a", UpdateRevision: "b", ReadyReplicas: 2, UpdatedReplicas: 1}
	replicasDone := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "a", UpdateRevision: "b", ReadyReplicas: 3, UpdatedReplicas: 2}
	notObserved := appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "a", UpdateRevision: "a", ReadyReplicas: 3, UpdatedReplicas: 3}
	cases := []struct {
		name     string
		live     *appsv1.StatefulSet
		hash     string
		replicas int32
		want     int32
	}{
		{"no StatefulSet yet", nil, "h1", 3, 0},
		{"single pod rolls at once", liveStatefulSet("h0", 0, settled), "h1", 1, 0},
		{"new template holds the primary back", liveStatefulSet("h0", 0, settled), "h1", 3, 1},
		{"replicas still rolling", liveStatefulSet("h1", 1, replicasRolling), "h1", 3, 1},
		{"replicas updated and ready release the primary", liveStatefulSet("h1", 1, replicasDone), "h1", 3, 0},
		{"controller has not observed the template yet", liveStatefulSet("h1", 1, notObserved), "h1", 3, 1},
		{"settled stays at zero", liveStatefulSet("h1", 0, settled), "h1", 3, 0},
		{"settled after a finished rollout drops the partition", liveStatefulSet("h1", 1, settled), "h1", 3, 0},
	}
	for _, tc := range cases {
		if got := rolloutPartition(tc.live, tc.hash, tc.replicas); got != tc.want {
			t.Errorf("%s: partition = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRolloutReplicas(t *testing.T) {
	withReplicas := func(sts *appsv1.StatefulSet, n int32) *appsv1.StatefulSet {
		sts.Spec.Replicas = ptr.To(n)
		sts.Status.Replicas = n
		return sts
	}
	settled := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "a", UpdateRevision: "a", ReadyReplicas: 4, UpdatedReplicas: 4}
	rolling := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "a", UpdateRevision: "b", ReadyReplicas: 4, UpdatedReplicas: 2}
	lastPodRolling := appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "b", UpdateRevision: "b", ReadyReplicas: 3, UpdatedReplicas: 3}
	notObserved := appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "a", UpdateRevision: "a", ReadyReplicas: 4, UpdatedReplicas: 4}
	cases := []struct {
		name  string
		live  *appsv1.StatefulSet
		hash  string
		want  int32
		stuck bool
		got   int32
	}{
		{"no StatefulSet yet", nil, "h1", 3, false, 3},
		{"more pods are added at once, mid-rollout too", withReplicas(liveStatefulSet("h1", 1, rolling), 4), "h1", 6, false, 6},
		{"fewer pods with the same template go at once", withReplicas(liveStatefulSet("h1", 0, settled), 4), "h1", 3, false, 3},
		{"fewer pods with a new template wait for it", withReplicas(liveStatefulSet("h0", 0, settled), 4), "h1", 3, false, 4},
		{"and keep waiting while it rolls", withReplicas(liveStatefulSet("h1", 1, rolling), 4), "h1", 3, false, 4},
		{"until the last pod is updated", withReplicas(liveStatefulSet("h1", 0, lastPodRolling), 4), "h1", 3, false, 4},
		{"or the controller has seen it", withReplicas(liveStatefulSet("h1", 0, notObserved), 4), "h1", 3, false, 4},
		{"unless the rollout is stuck", withReplicas(liveStatefulSet("h1", 1, rolling), 4), "h1", 3, true, 3},
		{"then they go", withReplicas(liveStatefulSet("h1", 0, settled), 4), "h1", 2, false, 2},
	}
	for _, tc := range cases {
		if got := rolloutReplicas(tc.live, tc.hash, tc.want, tc.stuck); got != tc.got {
			t.Errorf("%s: replicas = %d, want %d", tc.name, got, tc.got)
		}
	}
}
