package controllers

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestOnlyTheDesignatedPrimaryIsLabelledPrimary(t *testing.T) {
	pod := func(name, label string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if label != "" {
			p.Labels = map[string]string{dbpilotv1alpha1.LabelRole: label}
		}
		return p
	}
	const designated = "db-1"
	reports := map[string]layout.InstanceStatus{
		"db-0": {Role: layout.RolePrimary}, // a former primary back, still claiming the role
		"db-2": {Role: layout.RoleReplica},
	}
	for _, tc := range []struct {
		pod     *corev1.Pod
		reports map[string]layout.InstanceStatus
		want    string
	}{
		{pod("db-0", dbpilotv1alpha1.RolePrimary), reports, dbpilotv1alpha1.RoleReplica},
		{pod("db-1", ""), reports, dbpilotv1alpha1.RolePrimary},                                                              // not answering yet
		{pod("db-1", ""), map[string]layout.InstanceStatus{"db-1": {Role: layout.RoleReplica}}, dbpilotv1alpha1.RoleReplica}, // promotion pending
		{pod("db-1", ""), map[string]layout.InstanceStatus{"db-1": {Role: layout.RolePrimary}}, dbpilotv1alpha1.RolePrimary},
		{pod("db-2", dbpilotv1alpha1.RolePrimary), reports, dbpilotv1alpha1.RoleReplica},
	} {
		if got := podRole(designated, tc.pod, tc.reports); got != tc.want {
			t.Errorf("pod %s (label %q, reports %v): role %s, want %s", tc.pod.Name, tc.pod.Labels[dbpilotv1alpha1.LabelRole], tc.reports, got, tc.want)
		}
	}
}

func TestStrayPrimariesAreTheUndesignatedClaimants(t *testing.T) {
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}}, {ObjectMeta: metav1.ObjectMeta{Name: "db-1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "db-2"}}}
	reports := map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary}, "db-1": {Role: layout.RolePrimary}, "db-2": {Role: layout.RoleReplica}}
	stray := strayPrimaries("db-1", pods, reports)
	if len(stray) != 1 || stray[0].Name != "db-0" {
		t.Errorf("stray primaries %v, want db-0", stray)
	}
}

func TestCurrentPrimaryIsTheDesignatedOneServing(t *testing.T) {
	reports := map[string]layout.InstanceStatus{"a": {Role: layout.RolePrimary}, "b": {Role: layout.RolePrimary}, "c": {Role: layout.RoleReplica}}
	for designated, want := range map[string]string{"a": "a", "b": "b", "c": "", "d": ""} {
		if got := currentPrimary(designated, reports); got != want {
			t.Errorf("designated %s: current primary %q, want %q", designated, got, want)
		}
	}
}

func TestStaleSlots(t *testing.T) {
	db := testDatabase(3)
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: db.PodName(3)}}} // still being removed
	keep := keptSlots(db, pods)
	reported := []string{"x_0", layout.SlotName(db.PodName(1)), layout.SlotName(db.PodName(3)), layout.SlotName(db.PodName(4)),
		layout.SlotName(db.Name + "-backup"), "user_slot"}
	got := staleSlots(db, reported, keep)
	want := []string{layout.SlotName(db.PodName(4))}
	if !slices.Equal(got, want) {
		t.Errorf("stale slots %v, want %v (keep %v)", got, want, keep)
	}
}

func TestInstanceStatusesCarryWholeSecondsOfLag(t *testing.T) {
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "db-1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "db-0"}}}
	reports := map[string]layout.InstanceStatus{
		"db-0": {Role: layout.RolePrimary},
		"db-1": {Role: layout.RoleReplica, Replicating: true, LagSeconds: ptr.To(2.6)},
	}
	db := testDatabase(2)
	db.Annotations = map[string]string{dbpilotv1alpha1.AnnotationFenced: "db-9, db-1"}
	got := instanceStatuses(db, pods, reports)
	if len(got) != 2 || got[0].Name != "db-0" || got[0].LagSeconds != nil || got[1].LagSeconds == nil || *got[1].LagSeconds != 3 ||
		got[0].Fenced || !got[1].Fenced {
		t.Errorf("instances %+v", got)
	}
}

func TestFencedPods(t *testing.T) {
	pod := func(name string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	}
	db := testDatabase(3)
	for _, tc := range []struct {
		database string
		pod      *corev1.Pod
		want     bool
	}{
		{"", pod("db-0", nil), false},
		{"", pod("db-0", map[string]string{dbpilotv1alpha1.AnnotationFenced: "true"}), true},
		{"", pod("db-0", map[string]string{dbpilotv1alpha1.AnnotationFenced: "false"}), false},
		{"*", pod("db-2", nil), true},
		{"db-1,db-2", pod("db-2", nil), true},
		{"db-1,db-2", pod("db-0", nil), false},
		{"db-10", pod("db-1", nil), false},
	} {
		db.Annotations = map[string]string{dbpilotv1alpha1.AnnotationFenced: tc.database}
		if got := fenced(db, tc.pod); got != tc.want {
			t.Errorf("Database %q, pod %s %v: fenced %v, want %v", tc.database, tc.pod.Name, tc.pod.Annotations, got, tc.want)
		}
	}
}

func TestDatabaseIsPolledSoonWhileItsInstancesSettle(t *testing.T) {
	running := func(name string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
		}
	}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-2"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	pods := []corev1.Pod{running("db-0"), running("db-1"), pending}
	primary := layout.InstanceStatus{Role: layout.RolePrimary}
	streaming := layout.InstanceStatus{Role: layout.RoleReplica, Replicating: true, LagSeconds: ptr.To(0.2)}
	for _, tc := range []struct {
		name    string
		replica *layout.InstanceStatus
		want    time.Duration
	}{
		{"replica streaming, caught up", &streaming, instancePollInterval},
		{"replica not answering", nil, instanceSettlingPoll},
		{"replica not streaming", &layout.InstanceStatus{Role: layout.RoleReplica}, instanceSettlingPoll},
		{"replica behind", &layout.InstanceStatus{Role: layout.RoleReplica, Replicating: true, LagSeconds: ptr.To(3.0)}, instanceSettlingPoll},
		{"replica fenced", &layout.InstanceStatus{Role: layout.RoleReplica, Fenced: true}, instancePollInterval},
	} {
		reports := map[string]layout.InstanceStatus{"db-0": primary}
		if tc.replica != nil {
			reports["db-1"] = *tc.replica
		}
		if got := instancePoll(pods, reports); got != tc.want {
			t.Errorf("%s: polled again after %s, want %s", tc.name, got, tc.want)
		}
	}
}
