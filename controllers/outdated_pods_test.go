package controllers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestOutdatedUnplacedPodsAreOnlyThoseNoNodeTookFromAnOldTemplate(t *testing.T) {
	now := testNow.Time
	at := func(p corev1.Pod, revision string) corev1.Pod {
		p.Labels = map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
		return p
	}
	running := func(name, revision string) corev1.Pod {
		p := at(pod(name, true, now.Add(-time.Hour)), revision)
		p.Spec.NodeName = "node-a"
		return p
	}
	waiting := func(name, revision string) corev1.Pod {
		return at(unschedulable(name, now.Add(-time.Minute), "0/1 nodes are available: 1 Insufficient cpu."), revision)
	}
	rolling := func(partition int32, current, update string) *appsv1.StatefulSet {
		s := sts(3, 2, 1, current, update)
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)}
		return s
	}
	unseen := rolling(1, "small", "small")
	unseen.Generation = 2
	deleting := waiting("db-2", "big")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	notTried := at(pod("db-2", false, now), "big")
	bound := waiting("db-2", "big")
	bound.Spec.NodeName = "node-a"
	nominated := waiting("db-2", "big")
	nominated.Status.NominatedNodeName = "node-a"
	cases := []struct {
		name string
		live *appsv1.StatefulSet
		pods []corev1.Pod
		want []string
	}{
		{"the template taken back: the pod of the bigger one goes", rolling(1, "small", "small"),
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), waiting("db-2", "big")}, []string{"db-2"}},
		{"a lone pod rolled, taken back", rolling(0, "small", "small"), []corev1.Pod{waiting("db-0", "big")}, []string{"db-0"}},
		{"still the template it waits with", rolling(1, "small", "big"),
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), waiting("db-2", "big")}, nil},
		{"below the partition, the current revision", rolling(3, "small", "big"),
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), waiting("db-2", "small")}, nil},
		{"below the partition, from the update revision", rolling(3, "small", "big"),
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), waiting("db-2", "big")}, []string{"db-2"}},
		{"a running pod of an old template is the roll's", rolling(1, "small", "big"),
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), running("db-2", "small")}, nil},
		{"the controller has not seen the change", unseen,
			[]corev1.Pod{running("db-0", "small"), running("db-1", "small"), waiting("db-2", "big")}, nil},
		{"already deleting", rolling(1, "small", "small"), []corev1.Pod{running("db-0", "small"), deleting}, nil},
		{"the scheduler has not tried it", rolling(1, "small", "small"), []corev1.Pod{running("db-0", "small"), notTried}, nil},
		{"bound to a node since", rolling(1, "small", "small"), []corev1.Pod{running("db-0", "small"), bound}, nil},
		{"pods preempted for it", rolling(1, "small", "small"), []corev1.Pod{running("db-0", "small"), nominated}, nil},
		{"no StatefulSet", nil, []corev1.Pod{waiting("db-0", "big")}, nil},
	}
	for _, tc := range cases {
		var got []string
		for _, p := range outdatedUnplacedPods(tc.live, tc.pods) {
			got = append(got, p.Name)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
