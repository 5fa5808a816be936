package controllers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// A bigger tier the cluster cannot place leaves the pods a tier change
// recreates waiting for a node, and the change never ends: replicas first,
// so the primary keeps serving, but with fewer replicas, and every later
// change waits behind it. The auto-pilot takes its tier back once such a
// pod has waited past the placement grace, and keeps below it for
// placementMemory (the cluster may grow).

// insufficientResources is how the scheduler's refusal names a resource no
// node has enough of ("0/3 nodes are available: 3 Insufficient cpu.").
const insufficientResources = "Insufficient "

// tierPlaceableNow is the biggest tier the cluster is seen to place the
// pods at, the smaller of two signs; empty when neither shows a limit:
//   - a pod of a bigger tier (a tier change rolling out) has waited longer
//     than grace for a node, and the scheduler found none with the CPU or
//     memory it asks for: the smallest tier of the placed pods; or, when
//     none is placed (a lone pod recreated), the tier below the waiting
//     pod's if that is the tier raisedTo the auto-pilot last raised them
//     to (a pod that waits for a node after a drain or a resume is no tier
//     change's); a pod of the placed pods' tier that waits is a scale-up's
//     (placeableNow's);
//   - a pod runs on at its tier because an in-place resize of it to a
//     bigger one was refused (holdRefusedResize's mark): its tier.
func tierPlaceableNow(pods []corev1.Pod, raisedTo dbpilotv1alpha1.Tier, now time.Time, grace time.Duration) dbpilotv1alpha1.Tier {
	var placed, waiting, resizable dbpilotv1alpha1.Tier
	smaller := func(a, b dbpilotv1alpha1.Tier) bool { return b == "" || a.Index() < b.Index() }
	for i := range pods {
		pod := &pods[i]
		tier := dbpilotv1alpha1.Tier(pod.Annotations[desired.AnnotationTier])
		if !pod.DeletionTimestamp.IsZero() || tier.Index() < 0 {
			continue
		}
		if refused := dbpilotv1alpha1.Tier(pod.Annotations[desired.AnnotationResizeRefused]); refused.Index() > tier.Index() && smaller(tier, resizable) {
			resizable = tier
		}
		refusal, unplaced := schedulerRefusal(pod)
		switch {
		case !unplaced:
			if smaller(tier, placed) {
				placed = tier
			}
		case now.Sub(refusal.LastTransitionTime.Time) >= grace && strings.Contains(refusal.Message, insufficientResources):
			if smaller(tier, waiting) {
				waiting = tier
			}
		}
	}
	limit := resizable
	switch {
	case waiting == "" || waiting.Index() == 0:
	case placed == "" && waiting == raisedTo:
		if below := dbpilotv1alpha1.TierAt(waiting.Index() - 1); smaller(below, limit) {
			limit = below
		}
	case placed != "" && placed.Index() < waiting.Index() && smaller(placed, limit):
		limit = placed
	}
	return limit
}

// placeableTier is the PlaceableTier of the auto-pilot's policy: what the
// cluster places now, or what it placed within placementMemory; empty when
// nothing limits it.
func (r *AutopilotRunner) placeableTier(db *dbpilotv1alpha1.Database, pods []corev1.Pod, now time.Time) dbpilotv1alpha1.Tier {
	return recallPlacement(r.tierPlacements, client.ObjectKeyFromObject(db), tierPlaceableNow(pods, raisedTier(db), now, r.placementGrace()), now)
}

// raisedTier is the tier the auto-pilot's last decision raised the
// Database to; empty when its last decision was no tier up.
func raisedTier(db *dbpilotv1alpha1.Database) dbpilotv1alpha1.Tier {
	a := db.Status.Autopilot
	if a == nil || a.LastDecision == nil || a.Recommendation == nil || a.LastDecision.Action != string(autopilot.ActionTierUp) {
		return ""
	}
	return a.Recommendation.Tier
}
