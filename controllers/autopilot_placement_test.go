package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

func TestPlaceableNowCountsOnlyAScaleUpTheClusterCannotPlace(t *testing.T) {
	now := testNow.Time
	progressing := func(reason string) *dbpilotv1alpha1.Database {
		db := testDatabase(3)
		db.Status.Conditions = []metav1.Condition{{Type: dbpilotv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason}}
		return db
	}
	placed := func(name string) corev1.Pod { return pod(name, true, now.Add(-time.Hour)) }
	waiting := func(name string, since time.Duration) corev1.Pod {
		return unschedulable(name, now.Add(-since), "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")
	}
	cases := []struct {
		name string
		db   *dbpilotv1alpha1.Database
		pods []corev1.Pod
		want int32
	}{
		{"a third pod waits past the grace", progressing(dbpilotv1alpha1.ReasonScaling), []corev1.Pod{placed("db-0"), placed("db-1"), waiting("db-2", 6*time.Minute)}, 2},
		{"two new pods, one waiting past the grace", progressing(dbpilotv1alpha1.ReasonScaling), []corev1.Pod{placed("db-0"), waiting("db-1", 6*time.Minute), waiting("db-2", time.Minute)}, 1},
		{"within the grace a node may come", progressing(dbpilotv1alpha1.ReasonScaling), []corev1.Pod{placed("db-0"), placed("db-1"), waiting("db-2", time.Minute)}, 0},
		{"a pod a roll recreated", progressing(dbpilotv1alpha1.ReasonRollingUpdate), []corev1.Pod{placed("db-0"), placed("db-1"), waiting("db-2", 6*time.Minute)}, 0},
		{"a pod a drain recreated, not the last", progressing(dbpilotv1alpha1.ReasonScaling), []corev1.Pod{placed("db-0"), waiting("db-1", 6*time.Minute), placed("db-2")}, 0},
		{"every pod placed", progressing(dbpilotv1alpha1.ReasonScaling), []corev1.Pod{placed("db-0"), placed("db-1"), pod("db-2", false, now)}, 0},
		{"not progressing", testDatabase(3), []corev1.Pod{placed("db-0"), placed("db-1"), waiting("db-2", 6*time.Minute)}, 0},
	}
	for _, tc := range cases {
		if got := placeableNow(tc.db, tc.pods, now, placementGrace); got != tc.want {
			t.Errorf("%s: %d placeable, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPlacementIsRememberedForAWhile: once the auto-pilot has taken the
// pod back, the limit holds (no pod waits any more), until
// placementMemory has passed without one.
func TestPlacementIsRememberedForAWhile(t *testing.T) {
	now := testNow.Time
	r := &AutopilotRunner{placements: map[types.NamespacedName]placement[int32]{}}
	scaling := testDatabase(3)
	scaling.Status.Conditions = []metav1.Condition{{Type: dbpilotv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: dbpilotv1alpha1.ReasonScaling}}
	pods := []corev1.Pod{pod("db-0", true, now.Add(-time.Hour)), pod("db-1", true, now.Add(-time.Hour)),
		unschedulable("db-2", now.Add(-6*time.Minute), "0/2 nodes are available")}
	if got := r.placeable(scaling, pods, now); got != 2 {
		t.Fatalf("placeable %d, want 2", got)
	}
	settled := testDatabase(2)
	if got := r.placeable(settled, pods[:2], now.Add(placementMemory-time.Minute)); got != 2 {
		t.Errorf("within placementMemory: placeable %d, want 2", got)
	}
	if got := r.placeable(settled, pods[:2], now.Add(placementMemory+time.Minute)); got != 0 {
		t.Errorf("after placementMemory: placeable %d, want 0 (try more pods again)", got)
	}
	if len(r.placements) != 0 {
		t.Errorf("the placement is still kept: %v", r.placements)
	}
}
