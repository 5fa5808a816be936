package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func readyPod(name string, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func TestTheMostAdvancedAnsweringReplicaIsPromoted(t *testing.T) {
	replica := func(position string) layout.InstanceStatus {
		return layout.InstanceStatus{Role: layout.RoleReplica, Position: position, CredentialsApplied: true}
	}
	pods := []corev1.Pod{readyPod("db-0", false), readyPod("db-1", false), readyPod("db-2", true), readyPod("db-3", true), readyPod("db-4", true)}
	reports := map[string]layout.InstanceStatus{
		"db-0": {Role: layout.RolePrimary, Position: "9/0", CredentialsApplied: true}, // the lost primary
		"db-1": replica("1/A0000000"),
		"db-2": replica("1/9FFFFFFF"),
		"db-3": {Role: layout.RoleReplica, Position: "2/0"}, // still starting: users not applied
		"db-4": {Role: layout.RolePrimary, Position: "3/0", CredentialsApplied: true},
	}
	if got := chooseCandidate(dbpilotv1alpha1.EnginePostgres, pods, reports, "db-0"); got != "db-1" {
		t.Errorf("promoting %q, want db-1 (furthest WAL)", got)
	}
	reports["db-2"] = replica("1/A0000000")
	if got := chooseCandidate(dbpilotv1alpha1.EnginePostgres, pods, reports, "db-0"); got != "db-2" {
		t.Errorf("on a tie promoting %q, want the ready db-2", got)
	}
	pods[1] = readyPod("db-1", true)
	if got := chooseCandidate(dbpilotv1alpha1.EnginePostgres, pods, reports, "db-0"); got != "db-1" {
		t.Errorf("on a tie of ready ones promoting %q, want the lowest ordinal", got)
	}
	if got := chooseCandidate(dbpilotv1alpha1.EnginePostgres, pods, map[string]layout.InstanceStatus{"db-0": reports["db-0"]}, "db-0"); got != "" {
		t.Errorf("with no replica answering, promoting %q", got)
	}
	maria := map[string]layout.InstanceStatus{"db-1": replica("0-1-120,1-2-5"), "db-2": replica("0-1-124")}
	if got := chooseCandidate(dbpilotv1alpha1.EngineMariaDB, pods, maria, "db-0"); got != "db-1" {
		t.Errorf("MariaDB: promoting %q, want db-1 (125 transactions against 124)", got)
	}
}

func TestPositionRank(t *testing.T) {
	for _, tc := range []struct {
		engine   dbpilotv1alpha1.Engine
		position string
		want     uint64
		ok       bool
	}{
		{dbpilotv1alpha1.EnginePostgres, "16/B374D848", 0x16B374D848, true},
		{dbpilotv1alpha1.EnginePostgres, "garbage", 0, false},
		{dbpilotv1alpha1.EngineMariaDB, "0-1-5", 5, true},
		{dbpilotv1alpha1.EngineMariaDB, "", 0, true},
		{dbpilotv1alpha1.EngineMariaDB, "0-1", 0, false},
		{dbpilotv1alpha1.EngineMySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:11-18,aa:3", 14, true},
	} {
		got, ok := positionRank(tc.engine, tc.position)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %q: %d %v, want %d %v", tc.engine, tc.position, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPrimaryLostAt(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if at, lost := primaryLostAt(nil, now); !lost || !at.Equal(now) {
		t.Errorf("a missing pod: %v %v", at, lost)
	}
	ready := readyPod("db-0", true)
	if _, lost := primaryLostAt(&ready, now); lost {
		t.Error("a ready pod is lost")
	}
	unready := readyPod("db-0", false)
	unready.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-20 * time.Second))
	if at, lost := primaryLostAt(&unready, now); !lost || !at.Equal(now.Add(-20*time.Second)) {
		t.Errorf("a pod not ready for 20 s: %v %v", at, lost)
	}
	deleting := readyPod("db-0", true)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(110 * time.Second)))
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](120)
	if at, lost := primaryLostAt(&deleting, now); !lost || !at.Equal(now.Add(-10*time.Second)) {
		t.Errorf("a pod deleted 10 s ago: %v %v", at, lost)
	}
}
