package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// hibernationHold says why the pods of a Database with spec.hibernate do
// not stop yet, or "" when they may. The StatefulSet starts its pods in
// order and a replica is not ready without its primary, so the primary
// must be the pod of ordinal 0 before they stop: it moves there first
// (switchoverTarget), with nothing lost. A backup that runs on an
// instance finishes first (one not started yet fails: see
// DatabaseBackupReconciler.start). Pods once stopped stay stopped.
func (r *DatabaseReconciler) hibernationHold(ctx context.Context, s *scope, live *appsv1.StatefulSet) (string, error) {
	db := s.db
	if live != nil && ptr.Deref(live.Spec.Replicas, 1) == 0 {
		return "", nil
	}
	if d := s.designation; d != nil && failsOver(db) {
		first := db.PodName(0)
		switch {
		case d.FormerPrimary != "":
			return fmt.Sprintf("waiting for the primary to move from %s to %s", d.FormerPrimary, d.Primary), nil
		case d.Primary != first:
			if s.instances == nil {
				s.instances = readInstances(ctx, s)
			}
			why := switchoverProblem(s, first)
			if why == "" {
				why = "switching over"
			}
			return fmt.Sprintf("waiting for the primary %s to move to %s, the pod that starts first on resume: %s", d.Primary, first, why), nil
		}
	}
	backups, err := databaseBackups(ctx, r.Client, db)
	if err != nil {
		return "", err
	}
	for _, b := range backups {
		if b.DeletionTimestamp.IsZero() && b.Status.Phase == dbpilotv1alpha1.BackupPhaseRunning {
			return fmt.Sprintf("waiting for backup %s to finish on %s", b.Name, b.Status.Instance), nil
		}
	}
	return "", nil
}

// hibernationProgress is the Progressing condition of a Database with
// spec.hibernate: its reason, and a message naming what still runs.
func hibernationProgress(hold string, pods int) (string, string) {
	switch {
	case hold != "":
		return dbpilotv1alpha1.ReasonHibernating, fmt.Sprintf("Hibernating, %d pods left: %s", pods, hold)
	case pods > 0:
		return dbpilotv1alpha1.ReasonHibernating, fmt.Sprintf("Hibernating: stopping the pods, replicas first (%d left)", pods)
	}
	return dbpilotv1alpha1.ReasonHibernated, "spec.hibernate is true: no pod runs; the volumes are kept"
}

// runningReplicas is how many pods the Database is meant to run: none
// while it hibernates.
func runningReplicas(db *dbpilotv1alpha1.Database) int32 {
	if db.Spec.Hibernate {
		return 0
	}
	return db.EffectiveReplicas()
}
