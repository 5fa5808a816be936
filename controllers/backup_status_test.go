package controllers

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var backupNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// finished is a DatabaseBackup that ended minutesAgo in phase.
func finished(name string, phase dbpilotv1alpha1.BackupPhase, minutesAgo int, scheduled bool) dbpilotv1alpha1.DatabaseBackup {
	end := metav1.NewTime(backupNow.Add(-time.Duration(minutesAgo) * time.Minute))
	start := metav1.NewTime(end.Add(-90 * time.Second))
	b := dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:   dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: "orders"},
		Status: dbpilotv1alpha1.DatabaseBackupStatus{Phase: phase, StartTime: &start, CompletionTime: &end, Size: ptr.To(resource.MustParse("12Mi"))}}
	if phase == dbpilotv1alpha1.BackupPhaseFailed {
		b.Status.Message = "the object store answered 403"
	}
	if scheduled {
		b.Labels[dbpilotv1alpha1.LabelScheduled] = "true"
		b.Annotations[scheduledAt] = start.UTC().Format(time.RFC3339)
	}
	return b
}

func names(backups []dbpilotv1alpha1.DatabaseBackup) string {
	var n []string
	for _, b := range backups {
		n = append(n, b.Name)
	}
	return strings.Join(n, ",")
}

func TestExpiredBackups(t *testing.T) {
	backups := []dbpilotv1alpha1.DatabaseBackup{
		finished("s1", dbpilotv1alpha1.BackupPhaseCompleted, 50, true),
		finished("s2", dbpilotv1alpha1.BackupPhaseCompleted, 40, true),
		finished("manual", dbpilotv1alpha1.BackupPhaseCompleted, 45, false),
		finished("f1", dbpilotv1alpha1.BackupPhaseFailed, 35, true),
		finished("s3", dbpilotv1alpha1.BackupPhaseCompleted, 30, true),
		finished("f2", dbpilotv1alpha1.BackupPhaseFailed, 25, true),
		finished("f3", dbpilotv1alpha1.BackupPhaseFailed, 20, true),
		finished("f4", dbpilotv1alpha1.BackupPhaseFailed, 15, true),
		finished("s4", dbpilotv1alpha1.BackupPhaseCompleted, 10, true),
	}
	running := finished("running", dbpilotv1alpha1.BackupPhaseRunning, 0, true)
	running.Status.CompletionTime = nil
	backups = append(backups, running)
	tests := []struct {
		retention backup.Retention
		want      string
	}{
		{backup.Retention{Count: 2}, "s1,s2,f1"},
		{backup.Retention{Count: 10}, "f1"},
		{backup.Retention{MaxAge: 35 * time.Minute}, "s1,s2,f1"},
		{backup.Retention{Count: 1, MaxAge: time.Hour}, "s1,s2,s3,f1"},
	}
	for _, tt := range tests {
		if got := names(expiredBackups(backups, tt.retention, backupNow)); got != tt.want {
			t.Errorf("retention %+v expires %q, want %q (hand-made and running backups never)", tt.retention, got, tt.want)
		}
	}
}

func TestBackupStatusAndConditions(t *testing.T) {
	db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{Engine: dbpilotv1alpha1.EnginePostgres,
		Backup: &dbpilotv1alpha1.BackupSpec{Schedule: "* * * * *"}}}
	archived := backupNow.Add(-time.Minute)
	next := backupNow.Add(time.Minute)
	conditions := func(obs backupObservation) []metav1.Condition {
		var list []metav1.Condition
		backupConditions(db, obs, func(condType string, status metav1.ConditionStatus, reason, message string) {
			meta.SetStatusCondition(&list, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message})
		})
		return list
	}

	ok := backupObservation{next: &next, backups: []dbpilotv1alpha1.DatabaseBackup{
		finished("old", dbpilotv1alpha1.BackupPhaseCompleted, 30, true),
		finished("failed", dbpilotv1alpha1.BackupPhaseFailed, 20, true),
		finished("new", dbpilotv1alpha1.BackupPhaseCompleted, 10, true),
	}, archive: &layout.ArchiveStatus{LastArchived: "000000010000000000000007", LastArchivedTime: &archived}}
	status := buildBackupStatus(db, ok)
	if status.LastSuccessful == nil || status.LastSuccessful.Name != "new" || status.LastSuccessful.DurationSeconds != 90 ||
		status.LastFailed == nil || status.LastFailed.Name != "failed" || !strings.Contains(status.LastFailed.Message, "403") {
		t.Fatalf("last runs: %+v / %+v", status.LastSuccessful, status.LastFailed)
	}
	if !status.FirstRecoverabilityPoint.Time.Equal(backupNow.Add(-30*time.Minute)) || !status.LastRecoverabilityPoint.Time.Equal(archived) {
		t.Fatalf("recoverability window %v .. %v", status.FirstRecoverabilityPoint, status.LastRecoverabilityPoint)
	}
	if !status.NextScheduleTime.Time.Equal(next) || status.WALArchive.LastArchivedWAL != "000000010000000000000007" {
		t.Fatalf("next %v, archive %+v", status.NextScheduleTime, status.WALArchive)
	}
	list := conditions(ok)
	if !meta.IsStatusConditionTrue(list, dbpilotv1alpha1.ConditionBackupSucceeded) || !meta.IsStatusConditionTrue(list, dbpilotv1alpha1.ConditionContinuousArchiving) {
		t.Fatalf("healthy backups: %+v", list)
	}

	failing := ok
	failing.backups = append(failing.backups[:len(failing.backups):len(failing.backups)], finished("latest", dbpilotv1alpha1.BackupPhaseFailed, 1, true))
	failedAt := backupNow
	failing.archive = &layout.ArchiveStatus{LastArchived: "000000010000000000000007", LastArchivedTime: &archived,
		LastFailed: "000000010000000000000008", LastFailedTime: &failedAt, FailedCount: 3}
	list = conditions(failing)
	backupCond := meta.FindStatusCondition(list, dbpilotv1alpha1.ConditionBackupSucceeded)
	archiveCond := meta.FindStatusCondition(list, dbpilotv1alpha1.ConditionContinuousArchiving)
	if backupCond.Status != metav1.ConditionFalse || !strings.Contains(backupCond.Message, "latest failed: the object store answered 403") {
		t.Fatalf("a failed newest backup: %+v", backupCond)
	}
	if archiveCond.Status != metav1.ConditionFalse || !strings.Contains(archiveCond.Message, "000000010000000000000008") {
		t.Fatalf("archiving that fails: %+v", archiveCond)
	}

	if got := conditions(backupObservation{}); meta.FindStatusCondition(got, dbpilotv1alpha1.ConditionBackupSucceeded).Status != metav1.ConditionUnknown {
		t.Fatalf("before any backup: %+v", got)
	}
	if buildBackupStatus(&dbpilotv1alpha1.Database{}, ok) != nil {
		t.Fatal("a Database without spec.backup has no status.backup")
	}
}

func TestAutopilotHoldsDuringBackupsAndRestores(t *testing.T) {
	db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{Engine: dbpilotv1alpha1.EnginePostgres}}
	available := []metav1.Condition{{Type: dbpilotv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue}}
	db.Status.Conditions = available
	if busy := currentOf(db).Busy; busy != "" {
		t.Fatalf("an idle Database is busy with %q", busy)
	}
	db.Status.Backup = &dbpilotv1alpha1.BackupStatus{Running: "orders-20261123030000"}
	if busy := currentOf(db).Busy; !strings.Contains(busy, "orders-20261123030000") {
		t.Fatalf("while a backup runs: busy %q", busy)
	}
	db.Status.Backup = nil
	db.Spec.Bootstrap = &dbpilotv1alpha1.BootstrapSpec{FromBackup: &dbpilotv1alpha1.FromBackup{DatabaseBackupName: "b"}}
	db.Status.Conditions = nil
	if busy := currentOf(db).Busy; !strings.Contains(busy, "restore") {
		t.Fatalf("while a restore runs: busy %q", busy)
	}
	db.Status.Conditions = available
	if busy := currentOf(db).Busy; busy != "" {
		t.Fatalf("a restored, available Database is busy with %q", busy)
	}
}
