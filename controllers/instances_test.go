package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestRolesComeFromTheInstances(t *testing.T) {
	db := testDatabase(3)
	pod := func(name, label string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if label != "" {
			p.Labels = map[string]string{dbpilotv1alpha1.LabelRole: label}
		}
		return p
	}
	primary0 := db.PrimaryPodName()
	reports := map[string]layout.InstanceStatus{
		primary0:     {Role: layout.RoleReplica},
		"db-other":   {Role: layout.RolePrimary},
		"db-silent2": {},
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod(primary0, dbpilotv1alpha1.RolePrimary), dbpilotv1alpha1.RoleReplica},    // the report wins over the ordinal and the label
		{pod("db-other", dbpilotv1alpha1.RoleReplica), dbpilotv1alpha1.RolePrimary},  // a promoted replica
		{pod("db-silent", dbpilotv1alpha1.RolePrimary), dbpilotv1alpha1.RolePrimary}, // no report: the label stays
		{pod("db-silent2", ""), dbpilotv1alpha1.RoleReplica},                         // an empty report: bootstrap rule
		{pod(primary0+"x", ""), dbpilotv1alpha1.RoleReplica},
	} {
		if got := podRole(db, tc.pod, reports); got != tc.want {
			t.Errorf("pod %s (label %q): role %s, want %s", tc.pod.Name, tc.pod.Labels[dbpilotv1alpha1.LabelRole], got, tc.want)
		}
	}
	twoClaimants := map[string]layout.InstanceStatus{primary0: {Role: layout.RolePrimary}, "db-1": {Role: layout.RolePrimary}}
	if got := podRole(db, pod("db-1", dbpilotv1alpha1.RoleReplica), twoClaimants); got != dbpilotv1alpha1.RoleReplica {
		t.Errorf("a second pod claiming primary was labelled %s", got)
	}
	if got := podRole(db, pod(primary0, ""), nil); got != dbpilotv1alpha1.RolePrimary {
		t.Errorf("a new pod of ordinal 0 without report: %s", got)
	}
}

func TestCurrentPrimary(t *testing.T) {
	one := map[string]layout.InstanceStatus{"a": {Role: layout.RolePrimary}, "b": {Role: layout.RoleReplica}}
	if got := currentPrimary(one); got != "a" {
		t.Errorf("current primary %q, want a", got)
	}
	two := map[string]layout.InstanceStatus{"a": {Role: layout.RolePrimary}, "b": {Role: layout.RolePrimary}}
	if got := currentPrimary(two); got != "" {
		t.Errorf("two primaries named %q", got)
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
	got := instanceStatuses(pods, reports)
	if len(got) != 2 || got[0].Name != "db-0" || got[0].LagSeconds != nil || got[1].LagSeconds == nil || *got[1].LagSeconds != 3 {
		t.Errorf("instances %+v", got)
	}
}
