package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// reconcileRestoreSource resolves spec.bootstrap.fromBackup once, before any
// pod exists, into the Database's AnnotationRestoreSource: a
// DatabaseBackup must have Completed (its status says where its backup
// is). Until it is resolved, s.restoreProblem holds the StatefulSet back.
func (r *DatabaseReconciler) reconcileRestoreSource(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	if db.Spec.Bootstrap == nil || db.Spec.Bootstrap.FromBackup == nil || desired.RestoreSource(db) != nil {
		return ctrl.Result{}, nil
	}
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.statefulSet != nil {
		// Created before the annotation existed (an older operator): its
		// pods keep what they run.
		return ctrl.Result{}, nil
	}
	from := db.Spec.Bootstrap.FromBackup
	src := dbpilotv1alpha1.RestoreSource{BackupName: from.BackupName, TargetTime: from.TargetTime}
	if from.Destination != nil {
		src.Destination = *from.Destination
	} else {
		b := &dbpilotv1alpha1.DatabaseBackup{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: from.DatabaseBackupName}, b)
		switch {
		case apierrors.IsNotFound(err):
			s.restoreProblem = fmt.Sprintf("spec.bootstrap.fromBackup.databaseBackupName: no DatabaseBackup named %s", from.DatabaseBackupName)
			return ctrl.Result{RequeueAfter: rolloutPollInterval * 2}, nil
		case err != nil:
			return ctrl.Result{}, err
		case b.Status.Phase != dbpilotv1alpha1.BackupPhaseCompleted || b.Status.Destination == nil:
			s.restoreProblem = fmt.Sprintf("spec.bootstrap.fromBackup.databaseBackupName: DatabaseBackup %s is %s, not Completed",
				b.Name, phaseOrPending(b.Status.Phase))
			return ctrl.Result{RequeueAfter: rolloutPollInterval * 2}, nil
		case b.Status.Engine != "" && b.Status.Engine != db.Spec.Engine:
			s.restoreProblem = fmt.Sprintf("spec.bootstrap.fromBackup.databaseBackupName: DatabaseBackup %s is a backup of %s, not %s",
				b.Name, b.Status.Engine, db.Spec.Engine)
			return ctrl.Result{}, nil
		}
		src.Destination, src.BackupName = *b.Status.Destination, b.Status.BackupName
	}
	value, err := json.Marshal(src)
	if err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(db.DeepCopy())
	if db.Annotations == nil {
		db.Annotations = map[string]string{}
	}
	db.Annotations[dbpilotv1alpha1.AnnotationRestoreSource] = string(value)
	if err := r.Client.Patch(ctx, db, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording the restore source: %w", err)
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonRestoring, "Restore",
		"Restoring backup %s", src.BackupName)
	return ctrl.Result{}, nil
}

func phaseOrPending(p dbpilotv1alpha1.BackupPhase) dbpilotv1alpha1.BackupPhase {
	if p == "" {
		return dbpilotv1alpha1.BackupPhasePending
	}
	return p
}

// reconcileBackupClaim creates the claim of the Database's backups when
// spec.backup names no destination. It is never updated or deleted by
// dbpilot: it holds the backups.
func (r *DatabaseReconciler) reconcileBackupClaim(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	if !db.CreatesBackupClaim() {
		return ctrl.Result{}, nil
	}
	existing := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.BackupClaimName()}, existing)
	if err == nil || !apierrors.IsNotFound(err) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.Client.Apply(ctx, desired.BackupClaim(db), client.FieldOwner(FieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("creating the backup claim: %w", err)
	}
	return ctrl.Result{}, nil
}
