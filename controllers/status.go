package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// buildStatus rebuilds the reconciler's part of the status from the world.
// status.autopilot belongs to the auto-pilot and is left out. The observed
// generation moves only when the pass succeeded.
func buildStatus(db *dbpilotv1alpha1.Database, obs observation, now metav1.Time) dbpilotv1alpha1.DatabaseStatus {
	profile, _ := db.Spec.Engine.Profile()
	status := dbpilotv1alpha1.DatabaseStatus{
		ObservedGeneration: db.Status.ObservedGeneration,
		Selector:           db.Selector(),
		CredentialsSecret:  db.CredentialsSecretName(),
		Tier:               db.Status.Tier,
		Version:            db.Status.Version,
		Backup:             db.Status.Backup,
		Endpoints: &dbpilotv1alpha1.Endpoints{
			ReadWrite:         fmt.Sprintf("%s:%d", db.ServiceHost(db.ReadWriteServiceName()), profile.Port),
			ReadOnly:          fmt.Sprintf("%s:%d", db.ServiceHost(db.ReadOnlyServiceName()), profile.Port),
			ExternalReadWrite: externalEndpoint(obs.exposed[db.ReadWriteExternalServiceName()]),
			ExternalReadOnly:  externalEndpoint(obs.exposed[db.ReadOnlyExternalServiceName()]),
		},
	}
	if obs.reconcileErr == nil {
		status.ObservedGeneration = db.Generation
	}
	if obs.backupObserved {
		status.Backup = buildBackupStatus(db, obs.backup)
	}
	if sts := obs.statefulSet; sts != nil {
		status.Replicas = sts.Status.Replicas
		status.ReadyReplicas = sts.Status.ReadyReplicas
	}
	status.Ready = fmt.Sprintf("%d/%d", status.ReadyReplicas, runningReplicas(db))
	// What runs is what the primary's pod was created with.
	if primary := primaryPod(obs.primary, obs.pods); primary != nil {
		if tier := primary.Annotations[desired.AnnotationTier]; tier != "" {
			status.Tier = dbpilotv1alpha1.Tier(tier)
		}
		if version := primary.Annotations[desired.AnnotationVersion]; version != "" {
			status.Version = version
		}
	}
	if obs.instances != nil {
		status.Instances = instanceStatuses(db, obs.pods, obs.instances)
		status.CurrentPrimary = currentPrimary(obs.primary, obs.instances)
	} else {
		// Not asked this pass (paused): keep what was reported.
		status.Instances = db.Status.Instances
		status.CurrentPrimary = db.Status.CurrentPrimary
	}
	status.Users = db.Status.Users
	if obs.usersObserved {
		if obs.instances != nil {
			status.Users = userStatuses(obs.users, obs.primary, usersReport(obs.primary, obs.instances), db.Status.Users, now.Time)
		}
		obs.usersRefusal = usersRefusal(obs.users, status.Users)
	}
	status.Conditions = buildConditions(db, obs, db.Status.Conditions, now)
	if obs.failingOver != nil {
		obs.failingOver.ObservedGeneration, obs.failingOver.LastTransitionTime = db.Generation, now
		meta.SetStatusCondition(&status.Conditions, *obs.failingOver)
	}
	status.Phase = phaseOf(db, status.Conditions)
	return status
}

// writeStatus server-side applies the rebuilt status with the reconciler's
// field owner, only when it differs from the stored one.
func (r *DatabaseReconciler) writeStatus(ctx context.Context, s *scope, reconcileErr error) error {
	if err := r.observe(ctx, s); err != nil {
		reconcileErr = errors.Join(reconcileErr, err)
	}
	exposed, err := r.exposedServices(ctx, s.db)
	if err != nil {
		reconcileErr = errors.Join(reconcileErr, err)
	}
	obs := observation{
		exposed:                  exposed,
		statefulSet:              s.statefulSet,
		statefulSetWritten:       s.statefulSetWritten,
		pods:                     s.pods,
		credentialsProblem:       s.credentialsProblem,
		usersProblem:             s.usersProblem,
		users:                    s.users,
		usersObserved:            s.usersObserved,
		tlsProblem:               s.tlsProblem,
		clientCertificateProblem: s.clientCertificateProblem,
		volumeProblem:            s.volumeProblem,
		schedulingProblem:        s.schedulingProblem,
		exposeProblem:            s.exposeProblem,
		hibernationHold:          s.hibernationHold,
		resizeHeld:               s.resizeHeld,
		drainWait:                s.drainWait,
		predecessorPending:       s.predecessorPending,
		reconcileErr:             reconcileErr,
		degradingErr:             r.failures.degrading(client.ObjectKeyFromObject(s.db), reconcileErr, r.clock().Now()),
		instances:                s.instances,
		primary:                  designatedPrimary(s),
		failingOver:              failingOverCondition(s),
		backup:                   backupObservationOf(s),
		backupObserved:           !s.db.Spec.Paused,
	}
	status := buildStatus(s.db, obs, metav1.NewTime(r.clock().Now()))
	r.recordDegraded(s.db, status.Conditions)
	for _, user := range newlyExpired(s.db.Status.Users, status.Users) {
		r.Recorder.Eventf(s.db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonUserExpired, "ExpireUser",
			"User %s: %s; it may no longer log in and its sessions ended; what it owns and its password's Secret are kept", user.Name, user.Message)
	}
	databasePhases.record(client.ObjectKeyFromObject(s.db), s.db.Spec.Engine, status.Phase)
	setHibernated(client.ObjectKeyFromObject(s.db), s.db.Spec.Hibernate)
	setDegraded(client.ObjectKeyFromObject(s.db), status.Conditions)
	setUserStates(client.ObjectKeyFromObject(s.db), status.Users)
	setDrainWaiting(client.ObjectKeyFromObject(s.db), s.drainWaitNode)
	var lastSuccess, lastFailure *time.Time
	if b := status.Backup; b != nil {
		if b.LastSuccessfulTime != nil {
			lastSuccess = &b.LastSuccessfulTime.Time
		}
		if b.LastFailed != nil && b.LastFailed.Time != nil {
			lastFailure = &b.LastFailed.Time.Time
		}
	}
	setBackupTimes(client.ObjectKeyFromObject(s.db), s.db.Spec.Engine, lastSuccess, lastFailure)
	// Compare only what this reconciler owns: status.autopilot and the
	// auto-pilot's conditions belong to the auto-pilot.
	current := s.db.Status.DeepCopy()
	current.Autopilot = nil
	current.Conditions = ownConditions(current.Conditions)
	if equality.Semantic.DeepEqual(*current, status) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("converting status: %w", err)
	}
	return applyStatus(ctx, r.Client, s.db, content, FieldOwner)
}

// clock is the reconciler's Clock, the real one when none is set.
func (r *DatabaseReconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// recordDegraded records a Warning Event when the Database becomes Degraded:
// the condition changed from not True to True in this pass.
func (r *DatabaseReconciler) recordDegraded(db *dbpilotv1alpha1.Database, conditions []metav1.Condition) {
	now := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionDegraded)
	if now == nil || now.Status != metav1.ConditionTrue || meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionDegraded) {
		return
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonDegraded, "Degrade", "%s: %s", now.Reason, now.Message)
}

// ownConditions keeps the conditions the reconciler writes.
func ownConditions(conditions []metav1.Condition) []metav1.Condition {
	var own []metav1.Condition
	for _, cond := range conditions {
		switch cond.Type {
		case dbpilotv1alpha1.ConditionAvailable, dbpilotv1alpha1.ConditionProgressing, dbpilotv1alpha1.ConditionDegraded,
			dbpilotv1alpha1.ConditionFailingOver, dbpilotv1alpha1.ConditionBackupSucceeded, dbpilotv1alpha1.ConditionContinuousArchiving:
			own = append(own, cond)
		}
	}
	return own
}
