package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// backupObservation is what a pass saw of the Database's backups.
type backupObservation struct {
	// backups are its DatabaseBackups; next is the next scheduled run.
	backups []dbpilotv1alpha1.DatabaseBackup
	next    *time.Time
	// archive is the primary's archiving report; nil when unknown.
	archive *layout.ArchiveStatus
	// problem says what stops backups; restoreProblem why the restore
	// source is not resolved; restoreFailure why the restore failed.
	problem, restoreProblem, restoreFailure string
}

// backupObservationOf gathers the pass's view of backups.
func backupObservationOf(s *scope) backupObservation {
	obs := backupObservation{backups: s.backups, next: s.nextBackup, problem: s.backupProblem,
		restoreProblem: s.restoreProblem, restoreFailure: restoreFailure(s.db, s.pods)}
	if primary := designatedPrimary(s); primary != "" {
		if report, ok := s.instances[primary]; ok {
			obs.archive = report.Archive
		}
	}
	return obs
}

// buildBackupStatus is status.backup: the last scheduled, successful and
// failed runs, the next one, the window a restore can reach and the WAL
// archiving's state. Nil without spec.backup.
func buildBackupStatus(db *dbpilotv1alpha1.Database, obs backupObservation) *dbpilotv1alpha1.BackupStatus {
	if db.Spec.Backup == nil {
		return nil
	}
	status := &dbpilotv1alpha1.BackupStatus{Running: runningBackup(obs.backups)}
	if obs.next != nil {
		status.NextScheduleTime = &metav1.Time{Time: *obs.next}
	}
	if last := lastScheduled(obs.backups); last != nil {
		status.LastScheduleTime = &metav1.Time{Time: *last}
	}
	finished := finishedBackups(obs.backups)
	for _, b := range finished {
		run := backupRun(b)
		switch b.Status.Phase {
		case dbpilotv1alpha1.BackupPhaseCompleted:
			status.LastSuccessful, status.LastSuccessfulTime = run, run.Time
			if status.FirstRecoverabilityPoint == nil {
				status.FirstRecoverabilityPoint = run.Time
			}
			status.LastRecoverabilityPoint = run.Time
		case dbpilotv1alpha1.BackupPhaseFailed:
			status.LastFailed = run
		}
	}
	if a := obs.archive; a != nil {
		status.WALArchive = &dbpilotv1alpha1.WALArchiveStatus{LastArchivedWAL: a.LastArchived, LastFailedWAL: a.LastFailed}
		if a.LastArchivedTime != nil {
			status.WALArchive.LastArchivedTime = &metav1.Time{Time: *a.LastArchivedTime}
			// Archived WAL reaches past the newest backup, once there is
			// a backup to replay it onto.
			if status.LastRecoverabilityPoint != nil && a.LastArchivedTime.After(status.LastRecoverabilityPoint.Time) {
				status.LastRecoverabilityPoint = &metav1.Time{Time: *a.LastArchivedTime}
			}
		}
		if a.LastFailedTime != nil {
			status.WALArchive.LastFailedTime = &metav1.Time{Time: *a.LastFailedTime}
		}
	}
	return status
}

// finishedBackups are the completed and failed DatabaseBackups, oldest
// completion first.
func finishedBackups(backups []dbpilotv1alpha1.DatabaseBackup) []dbpilotv1alpha1.DatabaseBackup {
	var finished []dbpilotv1alpha1.DatabaseBackup
	for _, b := range backups {
		if b.Status.CompletionTime != nil && (b.Status.Phase == dbpilotv1alpha1.BackupPhaseCompleted || b.Status.Phase == dbpilotv1alpha1.BackupPhaseFailed) {
			finished = append(finished, b)
		}
	}
	sort.SliceStable(finished, func(i, j int) bool {
		return finished[i].Status.CompletionTime.Before(finished[j].Status.CompletionTime)
	})
	return finished
}

func backupRun(b dbpilotv1alpha1.DatabaseBackup) *dbpilotv1alpha1.BackupRun {
	run := &dbpilotv1alpha1.BackupRun{Name: b.Name, Time: b.Status.CompletionTime, Message: b.Status.Message}
	if b.Status.Size != nil {
		size := b.Status.Size.DeepCopy()
		run.Size = &size
	}
	if b.Status.StartTime != nil && b.Status.CompletionTime != nil {
		run.DurationSeconds = int64(b.Status.CompletionTime.Sub(b.Status.StartTime.Time).Round(time.Second).Seconds())
	}
	return run
}

// backupConditions sets BackupSucceeded (from the newest finished backup)
// and, for PostgreSQL, ContinuousArchiving (from the primary's archiver).
// Without spec.backup they are removed.
func backupConditions(db *dbpilotv1alpha1.Database, obs backupObservation, set func(condType string, status metav1.ConditionStatus, reason, message string)) {
	if db.Spec.Backup == nil {
		return
	}
	finished := finishedBackups(obs.backups)
	switch {
	case obs.problem != "":
		set(dbpilotv1alpha1.ConditionBackupSucceeded, metav1.ConditionFalse, dbpilotv1alpha1.ReasonBackupFailed, obs.problem)
	case len(finished) == 0:
		set(dbpilotv1alpha1.ConditionBackupSucceeded, metav1.ConditionUnknown, dbpilotv1alpha1.ReasonNoBackupYet, "No backup has finished yet")
	case finished[len(finished)-1].Status.Phase == dbpilotv1alpha1.BackupPhaseFailed:
		b := finished[len(finished)-1]
		set(dbpilotv1alpha1.ConditionBackupSucceeded, metav1.ConditionFalse, dbpilotv1alpha1.ReasonBackupFailed,
			fmt.Sprintf("Backup %s failed: %s", b.Name, b.Status.Message))
	default:
		b := finished[len(finished)-1]
		set(dbpilotv1alpha1.ConditionBackupSucceeded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonBackupCompleted,
			fmt.Sprintf("Backup %s completed (%s stored)", b.Name, quantityOrUnknown(b.Status.Size)))
	}
	if obs.archive == nil {
		return
	}
	a, what := obs.archive, "binary log"
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		what = "WAL segment"
	}
	switch {
	case a.LastFailedTime != nil && (a.LastArchivedTime == nil || a.LastFailedTime.After(*a.LastArchivedTime)):
		set(dbpilotv1alpha1.ConditionContinuousArchiving, metav1.ConditionFalse, dbpilotv1alpha1.ReasonArchivingFailing,
			fmt.Sprintf("Archiving %s %s fails (%d failures since the primary started); the primary keeps it until it is archived", what, a.LastFailed, a.FailedCount))
	case a.LastArchivedTime != nil:
		set(dbpilotv1alpha1.ConditionContinuousArchiving, metav1.ConditionTrue, dbpilotv1alpha1.ReasonArchiving,
			fmt.Sprintf("%s %s archived at %s", strings.ToUpper(what[:1])+what[1:], a.LastArchived, a.LastArchivedTime.UTC().Format(time.RFC3339)))
	default:
		set(dbpilotv1alpha1.ConditionContinuousArchiving, metav1.ConditionUnknown, dbpilotv1alpha1.ReasonArchiving, "Nothing archived yet")
	}
}

func quantityOrUnknown(q *resource.Quantity) string {
	if q == nil {
		return "size unknown"
	}
	return q.String()
}

// restoreFailure is why a restoring Database's first pod failed to start:
// the last termination message of its database container, when it names a
// restore.
func restoreFailure(db *dbpilotv1alpha1.Database, pods []corev1.Pod) string {
	if db.Spec.Bootstrap == nil || db.Spec.Bootstrap.FromBackup == nil {
		return ""
	}
	for _, pod := range pods {
		if pod.Name != db.PodName(0) {
			continue
		}
		for _, c := range pod.Status.ContainerStatuses {
			if t := c.LastTerminationState.Terminated; t != nil && strings.Contains(t.Message, "restoring backup") {
				return lastLine(t.Message)
			}
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
