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
	atZero := primaryPlace{ordinal: 0, switchable: true}
	atTwo := primaryPlace{ordinal: 2, switchable: true}
	fixed := primaryPlace{ordinal: 0}
	stuckAtTwo := primaryPlace{ordinal: 2}
	cases := []struct {
		name         string
		live         *appsv1.StatefulSet
		hash         string
		replicas     int32
		primary      primaryPlace
		want         int32
		wantHandover int
	}{
		{"no StatefulSet yet", nil, "h1", 3, atZero, 0, noHandover},
		{"single pod rolls at once", liveStatefulSet("h0", 0, settled), "h1", 1, atZero, 0, noHandover},
		{"new template holds ordinal 0 back", liveStatefulSet("h0", 0, settled), "h1", 3, atZero, 1, noHandover},
		{"new template with the primary elsewhere: hand it to ordinal 0 first", liveStatefulSet("h0", 0, settled), "h1", 3, atTwo, 3, 0},
		{"holding until the primary is at ordinal 0", liveStatefulSet("h1", 3, replicasRolling), "h1", 3, atTwo, 3, 0},
		{"primary at ordinal 0: the others roll", liveStatefulSet("h1", 3, replicasRolling), "h1", 3, atZero, 1, noHandover},
		{"a primary that cannot move does not hold the rollout", liveStatefulSet("h0", 0, settled), "h1", 3, stuckAtTwo, 1, noHandover},
		{"replicas still rolling", liveStatefulSet("h1", 1, replicasRolling), "h1", 3, atZero, 1, noHandover},
		{"replicas updated and ready: hand the primary to ordinal 1 first", liveStatefulSet("h1", 1, replicasDone), "h1", 3, atZero, 1, 1},
		{"handed over: ordinal 0 rolls, as a replica", liveStatefulSet("h1", 1, replicasDone), "h1", 3, primaryPlace{ordinal: 1, switchable: true}, 0, noHandover},
		{"a primary that cannot move restarts last", liveStatefulSet("h1", 1, replicasDone), "h1", 3, fixed, 0, noHandover},
		{"controller has not observed the template yet", liveStatefulSet("h1", 1, notObserved), "h1", 3, atZero, 1, noHandover},
		{"settled stays at zero", liveStatefulSet("h1", 0, settled), "h1", 3, atZero, 0, noHandover},
		{"settled after a finished rollout drops the partition", liveStatefulSet("h1", 1, settled), "h1", 3, atZero, 0, noHandover},
	}
	for _, tc := range cases {
		got, handover := rolloutPartition(tc.live, tc.hash, tc.replicas, tc.primary)
		if got != tc.want || handover != tc.wantHandover {
			t.Errorf("%s: partition = %d, handover %d; want %d, %d", tc.name, got, handover, tc.want, tc.wantHandover)
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
