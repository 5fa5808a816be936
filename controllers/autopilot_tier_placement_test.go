package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

func TestTierPlaceableNowReadsOnlyABiggerTierNoNodeHasRoomFor(t *testing.T) {
	now := testNow.Time
	short := "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	elsewhere := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
	of := func(p corev1.Pod, tier dbpilotv1alpha1.Tier) corev1.Pod {
		p.Annotations = map[string]string{desired.AnnotationTier: string(tier)}
		return p
	}
	placed := func(name string, tier dbpilotv1alpha1.Tier) corev1.Pod {
		return of(pod(name, true, now.Add(-time.Hour)), tier)
	}
	waiting := func(name string, tier dbpilotv1alpha1.Tier, since time.Duration, why string) corev1.Pod {
		return of(unschedulable(name, now.Add(-since), why), tier)
	}
	refused := func(p corev1.Pod, tier dbpilotv1alpha1.Tier) corev1.Pod {
		p.Annotations[desired.AnnotationResizeRefused] = string(tier)
		return p
	}
	small, medium, large := dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium, dbpilotv1alpha1.TierLarge
	cases := []struct {
		name     string
		pods     []corev1.Pod
		raisedTo dbpilotv1alpha1.Tier
		want     dbpilotv1alpha1.Tier
	}{
		{"a replica rolled to medium waits past the grace", []corev1.Pod{placed("db-0", small), placed("db-1", small), waiting("db-2", medium, 6*time.Minute, short)}, "", small},
		{"a lone pod rolled to large", []corev1.Pod{waiting("db-0", large, 6*time.Minute, short)}, large, medium},
		{"a lone pod waiting after a drain, no tier change", []corev1.Pod{waiting("db-0", large, 6*time.Minute, short)}, "", ""},
		{"a lone pod waiting, the tier raised to another", []corev1.Pod{waiting("db-0", large, 6*time.Minute, short)}, medium, ""},
		{"a replica rolled, another placed at the new tier", []corev1.Pod{placed("db-0", small), placed("db-1", medium), waiting("db-2", medium, 6*time.Minute, short)}, "", small},
		{"within the grace a node may come", []corev1.Pod{placed("db-0", small), waiting("db-1", medium, time.Minute, short)}, "", ""},
		{"no node matches, whatever the size", []corev1.Pod{placed("db-0", small), waiting("db-1", medium, 6*time.Minute, elsewhere)}, "", ""},
		{"a scale-up's pod of the placed tier", []corev1.Pod{placed("db-0", medium), placed("db-1", medium), waiting("db-2", medium, 6*time.Minute, short)}, "", ""},
		{"the smallest tier waits", []corev1.Pod{waiting("db-0", small, 6*time.Minute, short)}, "", ""},
		{"every pod placed", []corev1.Pod{placed("db-0", small), placed("db-1", medium)}, "", ""},
		{"a lone pod's resize refused", []corev1.Pod{refused(placed("db-0", small), large)}, "", small},
		{"a mark of a tier it has since reached", []corev1.Pod{refused(placed("db-0", medium), medium)}, "", ""},
		{"the smaller of both signs", []corev1.Pod{refused(placed("db-0", medium), large), waiting("db-1", medium, 6*time.Minute, short), placed("db-2", small)}, "", small},
	}
	for _, tc := range cases {
		if got := tierPlaceableNow(tc.pods, tc.raisedTo, now, placementGrace); got != tc.want {
			t.Errorf("%s: %q placeable, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTierPlacementIsRememberedForAWhile: once the auto-pilot has taken
// the tier back, the limit holds (no pod waits any more), until
// placementMemory has passed without one.
func TestTierPlacementIsRememberedForAWhile(t *testing.T) {
	now := testNow.Time
	r := &AutopilotRunner{tierPlacements: map[types.NamespacedName]placement[dbpilotv1alpha1.Tier]{}}
	db := testDatabase(2)
	running := pod("db-0", true, now.Add(-time.Hour))
	running.Annotations = map[string]string{desired.AnnotationTier: string(dbpilotv1alpha1.TierSmall)}
	waiting := unschedulable("db-1", now.Add(-6*time.Minute), "0/1 nodes are available: 1 Insufficient memory.")
	waiting.Annotations = map[string]string{desired.AnnotationTier: string(dbpilotv1alpha1.TierMedium)}
	if got := r.placeableTier(db, []corev1.Pod{running, waiting}, now); got != dbpilotv1alpha1.TierSmall {
		t.Fatalf("placeable tier %q, want small", got)
	}
	if got := r.placeableTier(db, []corev1.Pod{running}, now.Add(placementMemory-time.Minute)); got != dbpilotv1alpha1.TierSmall {
		t.Errorf("within placementMemory: placeable tier %q, want small", got)
	}
	if got := r.placeableTier(db, []corev1.Pod{running}, now.Add(placementMemory+time.Minute)); got != "" {
		t.Errorf("after placementMemory: placeable tier %q, want none (try a bigger tier again)", got)
	}
	if len(r.tierPlacements) != 0 {
		t.Errorf("the tier placement is still kept: %v", r.tierPlacements)
	}
}
