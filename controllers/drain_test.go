package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
)

func TestADrainedPrimaryIsHandedToAReplicaElsewhere(t *testing.T) {
	on := func(name, node string) corev1.Pod {
		pod := readyPod(name, true)
		pod.Spec.NodeName = node
		return pod
	}
	replica := func(position string) layout.InstanceStatus {
		return layout.InstanceStatus{Role: layout.RoleReplica, Position: position, CredentialsApplied: true}
	}
	reports := map[string]layout.InstanceStatus{
		"db-0": {Role: layout.RolePrimary, Position: "2/0", CredentialsApplied: true},
		"db-1": replica("1/F0000000"),
		"db-2": replica("2/0"),
	}
	for _, tc := range []struct {
		name     string
		pods     []corev1.Pod
		draining map[string]bool
		want     string
	}{
		{"no drain", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "c")}, map[string]bool{}, ""},
		{"a replica's node drained", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "c")}, map[string]bool{"c": true}, ""},
		{"the primary's node drained: the most advanced replica", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "c")}, map[string]bool{"a": true}, "db-2"},
		{"not to a replica on the same node", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "a")}, map[string]bool{"a": true}, "db-1"},
		{"not to a replica on another drained node", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "c")}, map[string]bool{"a": true, "c": true}, "db-1"},
		{"none elsewhere: no switchover", []corev1.Pod{on("db-0", "a"), on("db-1", "a"), on("db-2", "a")}, map[string]bool{"a": true}, ""},
		{"not to a pod no node holds", []corev1.Pod{on("db-0", "a"), on("db-1", "b"), on("db-2", "")}, map[string]bool{"a": true}, "db-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{db: testDatabase(3), pods: tc.pods, instances: reports, drainingNodes: tc.draining,
				designation: &designation.Designation{Primary: "db-0", Epoch: 2}}
			target, why, requested := switchoverTarget(s)
			if target != tc.want || requested {
				t.Fatalf("switchoverTarget = %q (%s, requested %v), want %q", target, why, requested, tc.want)
			}
		})
	}
}

func TestARolloutHandsNoPrimaryToADrainedNode(t *testing.T) {
	on := func(name, node string) corev1.Pod {
		pod := readyPod(name, true)
		pod.Spec.NodeName = node
		return pod
	}
	pods := []corev1.Pod{on("db-0", "a"), on("db-1", "b")}
	for _, tc := range []struct {
		name     string
		draining map[string]bool
		want     string
	}{
		{"no drain", map[string]bool{}, "db-0"},
		{"the handover's node drained", map[string]bool{"a": true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{db: testDatabase(2), pods: pods, drainingNodes: tc.draining, rolloutHandover: "db-0",
				designation: &designation.Designation{Primary: "db-1", Epoch: 2}}
			if target, why, _ := switchoverTarget(s); target != tc.want {
				t.Errorf("switchoverTarget = %q (%s), want %q", target, why, tc.want)
			}
		})
	}
}

func TestDrainChangedOnlyWhenDrainingDoes(t *testing.T) {
	node := func(unschedulable bool, label string) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
		n.Name, n.Labels = "a", map[string]string{"l": label}
		return n
	}
	p := drainChanged{}
	if !p.Update(event.UpdateEvent{ObjectOld: node(false, "x"), ObjectNew: node(true, "x")}) {
		t.Error("a cordon is let through")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: node(true, "x"), ObjectNew: node(false, "x")}) {
		t.Error("an uncordon is let through")
	}
	if p.Update(event.UpdateEvent{ObjectOld: node(false, "x"), ObjectNew: node(false, "y")}) {
		t.Error("a node's heartbeat or label change is let through")
	}
	if p.Create(event.CreateEvent{Object: node(true, "x")}) {
		t.Error("a node's creation is let through")
	}
}
