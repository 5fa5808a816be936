package controllers

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// failedBackupsKept bounds how many failed scheduled DatabaseBackups stay
// for inspection.
const failedBackupsKept = 3

// scheduleParser reads spec.backup.schedule: five cron fields, or six with
// seconds first, or a macro.
var scheduleParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// reconcileBackups runs spec.backup: it creates a DatabaseBackup when the
// schedule says so (none while another of the Database's backups runs: that
// run is skipped, as a CronJob with concurrencyPolicy Forbid does; none
// while it hibernates, the latest missed run being taken on resume), prunes
// the scheduled ones retention no longer keeps, and records what it sees
// for the status.
func (r *DatabaseReconciler) reconcileBackups(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	if db.Spec.Backup == nil {
		return ctrl.Result{}, nil
	}
	backups, err := databaseBackups(ctx, r.Client, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	schedule, err := scheduleParser.Parse(db.Spec.Backup.Schedule)
	if err != nil {
		// The CRD's pattern admits a few schedules the parser refuses.
		s.backupProblem = fmt.Sprintf("spec.backup.schedule %q: %v", db.Spec.Backup.Schedule, err)
		return ctrl.Result{}, nil
	}
	now := r.clock().Now()
	last := lastScheduled(backups)
	from := db.CreationTimestamp.Time
	if last != nil {
		from = *last
	}
	due := schedule.Next(from)
	if !due.After(now) && db.Spec.Hibernate {
		// No instance runs to take it: the latest run missed is taken
		// on resume, which changes the spec (and so reconciles).
		s.backups = backups
		return ctrl.Result{}, r.pruneBackups(ctx, db, backups, now)
	}
	if !due.After(now) {
		// Only the latest missed run is taken, not every one missed while
		// the operator was away.
		for next := schedule.Next(due); !next.After(now); next = schedule.Next(next) {
			due = next
		}
		if running := runningBackup(backups); running != "" {
			log := ctrl.LoggerFrom(ctx)
			log.Info("scheduled backup skipped: another backup of the Database runs", "running", running)
		} else if err := r.createScheduledBackup(ctx, db, due); err != nil {
			return ctrl.Result{}, err
		}
		if backups, err = databaseBackups(ctx, r.Client, db); err != nil {
			return ctrl.Result{}, err
		}
		from = due
	}
	next := schedule.Next(from)
	s.nextBackup = &next
	s.backups = backups
	if err := r.pruneBackups(ctx, db, backups, now); err != nil {
		return ctrl.Result{}, err
	}
	wait := next.Sub(now)
	if runningBackup(backups) != "" && wait > backupPollInterval*6 {
		// A running backup's end changes the status.
		wait = backupPollInterval * 6
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// databaseBackups lists the DatabaseBackups of db.
func databaseBackups(ctx context.Context, c client.Client, db *dbpilotv1alpha1.Database) ([]dbpilotv1alpha1.DatabaseBackup, error) {
	list := &dbpilotv1alpha1.DatabaseBackupList{}
	if err := c.List(ctx, list, client.InNamespace(db.Namespace)); err != nil {
		return nil, fmt.Errorf("listing DatabaseBackups: %w", err)
	}
	var mine []dbpilotv1alpha1.DatabaseBackup
	for _, b := range list.Items {
		if b.Spec.DatabaseName == db.Name {
			mine = append(mine, b)
		}
	}
	return mine, nil
}

// scheduledAt is the annotation of a scheduled DatabaseBackup with the
// scheduled time it runs for.
const scheduledAt = "dbpilot.io/scheduled-at"

// lastScheduled is the newest scheduled time a DatabaseBackup was created
// for; nil when none.
func lastScheduled(backups []dbpilotv1alpha1.DatabaseBackup) *time.Time {
	var last *time.Time
	for _, b := range backups {
		t, err := time.Parse(time.RFC3339, b.Annotations[scheduledAt])
		if err != nil || b.Labels[dbpilotv1alpha1.LabelScheduled] != "true" {
			continue
		}
		if last == nil || t.After(*last) {
			last = &t
		}
	}
	return last
}

// runningBackup names a DatabaseBackup that has not finished; "" when none.
func runningBackup(backups []dbpilotv1alpha1.DatabaseBackup) string {
	for _, b := range backups {
		if b.DeletionTimestamp.IsZero() && b.Status.Phase != dbpilotv1alpha1.BackupPhaseCompleted && b.Status.Phase != dbpilotv1alpha1.BackupPhaseFailed {
			return b.Name
		}
	}
	return ""
}

// ScheduledBackupName names the DatabaseBackup of the run scheduled at t:
// <database>-<UTC time>, so a run is created once however often it is
// looked at.
func ScheduledBackupName(db *dbpilotv1alpha1.Database, t time.Time) string {
	return db.Name + "-" + t.UTC().Format("20060102150405")
}

func (r *DatabaseReconciler) createScheduledBackup(ctx context.Context, db *dbpilotv1alpha1.Database, at time.Time) error {
	b := &dbpilotv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: ScheduledBackupName(db, at), Namespace: db.Namespace,
			Labels: map[string]string{
				dbpilotv1alpha1.LabelDatabase: db.Name, dbpilotv1alpha1.LabelScheduled: "true",
				dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue,
			},
			Annotations: map[string]string{scheduledAt: at.UTC().Format(time.RFC3339)},
		},
		// No owner: the backups outlive the Database, so it can be
		// restored after it was deleted.
		Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: db.Name, DeletionPolicy: dbpilotv1alpha1.DeletionPolicyDelete},
	}
	if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating DatabaseBackup %s: %w", b.Name, err)
	}
	r.Recorder.Eventf(db, b, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupScheduled, "Backup",
		"Scheduled backup %s created", b.Name)
	return nil
}

// pruneBackups deletes the scheduled DatabaseBackups retention no longer
// keeps (their finalizer deletes the artifacts), and failed scheduled ones
// beyond failedBackupsKept.
func (r *DatabaseReconciler) pruneBackups(ctx context.Context, db *dbpilotv1alpha1.Database, backups []dbpilotv1alpha1.DatabaseBackup, now time.Time) error {
	maxAge, err := db.BackupMaxAge()
	if err != nil {
		return err
	}
	expired := expiredBackups(backups, backup.Retention{Count: int(db.Spec.Backup.Retention), MaxAge: maxAge}, now)
	for i := range expired {
		if err := r.Client.Delete(ctx, &expired[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting expired DatabaseBackup %s: %w", expired[i].Name, err)
		}
	}
	if len(expired) > 0 {
		names := make([]string, len(expired))
		for i, b := range expired {
			names[i] = b.Name
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupsPruned, "Prune",
			"Retention deleted %d backups: %v", len(expired), names)
	}
	return nil
}

// expiredBackups are the scheduled DatabaseBackups retention removes:
// completed ones beyond the policy (the newest always stays), and failed
// ones beyond the newest failedBackupsKept.
func expiredBackups(backups []dbpilotv1alpha1.DatabaseBackup, retention backup.Retention, now time.Time) []dbpilotv1alpha1.DatabaseBackup {
	var completed, failed []dbpilotv1alpha1.DatabaseBackup
	for _, b := range backups {
		if b.Labels[dbpilotv1alpha1.LabelScheduled] != "true" || !b.DeletionTimestamp.IsZero() || b.Status.CompletionTime == nil {
			continue
		}
		switch b.Status.Phase {
		case dbpilotv1alpha1.BackupPhaseCompleted:
			completed = append(completed, b)
		case dbpilotv1alpha1.BackupPhaseFailed:
			failed = append(failed, b)
		}
	}
	byCompletion := func(list []dbpilotv1alpha1.DatabaseBackup) {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Status.CompletionTime.Before(list[j].Status.CompletionTime) })
	}
	byCompletion(completed)
	byCompletion(failed)
	manifests := make([]layout.BackupManifest, len(completed))
	for i, b := range completed {
		manifests[i] = layout.BackupManifest{Name: b.Name, EndTime: b.Status.CompletionTime.Time}
	}
	var expired []dbpilotv1alpha1.DatabaseBackup
	for _, m := range retention.Expired(manifests, now) {
		for _, b := range completed {
			if b.Name == m.Name {
				expired = append(expired, b)
			}
		}
	}
	if len(failed) > failedBackupsKept {
		expired = append(expired, failed[:len(failed)-failedBackupsKept]...)
	}
	return expired
}
