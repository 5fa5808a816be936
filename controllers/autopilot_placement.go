package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// placementGrace is how long a pod a scale-up added may wait for a node
// before the auto-pilot takes it back: long enough for a cluster
// autoscaler to add one.
const placementGrace = 5 * time.Minute

// placementMemory is how long the auto-pilot keeps to the pods the cluster
// placed after it last saw one it could not place; then it tries more pods
// again (the cluster may have grown).
const placementMemory = 30 * time.Minute

// placement is a limit the cluster showed for a Database (the most pods,
// or the biggest tier, it placed), and when it last showed it.
type placement[T comparable] struct {
	limit T
	seen  time.Time
}

// recallPlacement keeps shown, the limit the pods show now (the zero
// value: none), in memory, and returns the limit last shown within
// placementMemory; the zero value when none was, forgetting it after.
func recallPlacement[T comparable](memory map[types.NamespacedName]placement[T], key types.NamespacedName, shown T, now time.Time) T {
	var none T
	if shown != none {
		memory[key] = placement[T]{limit: shown, seen: now}
	}
	p, ok := memory[key]
	if !ok {
		return none
	}
	if now.Sub(p.seen) > placementMemory {
		delete(memory, key)
		return none
	}
	return p.limit
}

// placeableNow is how many of the Database's pods the scheduler placed,
// when it scales (not rolls), the pods it could not place are the last
// ordinals (those a scale-up adds, and a scale-down removes first), and
// one has waited for a node for longer than grace; 0 when nothing shows a
// limit. A pod a roll or a drain recreates and the scheduler cannot place
// is not the number of pods' doing: fewer pods would remove another one.
func placeableNow(db *dbpilotv1alpha1.Database, pods []corev1.Pod, now time.Time, grace time.Duration) int32 {
	progressing := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)
	if progressing == nil || progressing.Status != metav1.ConditionTrue || progressing.Reason != dbpilotv1alpha1.ReasonScaling {
		return 0
	}
	var placed int32
	firstUnplaced := -1
	waitedLong := false
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		refusal, unplaced := schedulerRefusal(pod)
		if !unplaced {
			placed++
			continue
		}
		if ordinal := ordinalOf(pod.Name); firstUnplaced < 0 || ordinal < firstUnplaced {
			firstUnplaced = ordinal
		}
		waitedLong = waitedLong || now.Sub(refusal.LastTransitionTime.Time) >= grace
	}
	if !waitedLong || firstUnplaced < int(placed) {
		return 0
	}
	return placed
}

// placeable is the PlaceableReplicas of the auto-pilot's policy: what the
// cluster places now, or what it placed within placementMemory; 0 when
// nothing limits it. A limit seen only one pod short of the owner's
// minimum is still a limit: the engine keeps the minimum.
func (r *AutopilotRunner) placeable(db *dbpilotv1alpha1.Database, pods []corev1.Pod, now time.Time) int32 {
	return recallPlacement(r.placements, client.ObjectKeyFromObject(db), placeableNow(db, pods, now, r.placementGrace()), now)
}

func (r *AutopilotRunner) placementGrace() time.Duration {
	if r.PlacementGrace <= 0 {
		return placementGrace
	}
	return r.PlacementGrace
}
