package controllers

import (
	"context"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// keptSlots are the replication slots the primary keeps: one for each pod
// that exists and each ordinal below spec.replicas.
func keptSlots(db *dbpilotv1alpha1.Database, pods []corev1.Pod) []string {
	var keep []string
	for i := range int(db.EffectiveReplicas()) {
		keep = append(keep, layout.SlotName(db.PodName(i)))
	}
	for i := range pods {
		keep = append(keep, layout.SlotName(pods[i].Name))
	}
	slices.Sort(keep)
	return slices.Compact(keep)
}

// staleSlots are the primary's slots that dbpilot made for a replica (the
// slot of a pod name: the Database's name and an ordinal) and no replica
// will use again. Slots of other names are the user's and are left alone.
func staleSlots(db *dbpilotv1alpha1.Database, reported, keep []string) []string {
	prefix := layout.SlotName(db.Name + "-")
	var stale []string
	for _, slot := range reported {
		ordinal, ours := strings.CutPrefix(slot, prefix)
		if _, err := strconv.Atoi(ordinal); ours && err == nil && !slices.Contains(keep, slot) {
			stale = append(stale, slot)
		}
	}
	return stale
}

// dropStaleSlots asks a PostgreSQL primary that reports slots of replicas
// that are gone (scaled away) to drop them, so their WAL does not fill its
// disk; the primary drops only inactive ones. Failures are logged and tried
// again on the next poll.
func (r *DatabaseReconciler) dropStaleSlots(ctx context.Context, s *scope) {
	db := s.db
	if db.Spec.Engine != dbpilotv1alpha1.EnginePostgres {
		return
	}
	if s.designation == nil {
		return
	}
	primary := currentPrimary(s.designation.Primary, s.instances)
	stale := staleSlots(db, s.instances[primary].Slots, keptSlots(db, s.pods))
	if primary == "" || len(stale) == 0 {
		return
	}
	var target instanceTarget
	for i := range s.pods {
		if s.pods[i].Name == primary {
			target = s.instanceTarget(&s.pods[i])
		}
	}
	log := logf.FromContext(ctx)
	token, err := r.replicationPassword(ctx, db)
	if err != nil {
		log.Error(err, "dropping slots")
		return
	}
	dropped, err := requestDropSlots(ctx, target, token, stale)
	if err != nil {
		log.Error(err, "dropping the primary's stale replication slots", "primary", primary)
		return
	}
	if len(dropped) > 0 {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonSlotsDropped, "DropSlots",
			"Dropped the replication slots %v of replicas that no longer exist, so the primary frees their WAL", dropped)
	}
}

// requestDropSlots POSTs the slots to drop to the primary's instance
// program, authenticated with the replication password.
func requestDropSlots(ctx context.Context, target instanceTarget, token string, slots []string) ([]string, error) {
	var answer layout.DropSlotsResponse
	err := postInstance(ctx, target, layout.DropSlotsPath, token, instanceStatusTimeout, layout.DropSlotsRequest{Slots: slots}, &answer)
	return answer.Dropped, err
}
