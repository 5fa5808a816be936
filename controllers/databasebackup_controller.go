package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// BackupFieldOwner is the field manager of the DatabaseBackup reconciler.
const BackupFieldOwner = "dbpilot-backup-controller"

// Timing of a backup's run.
const (
	// backupPollInterval is how often a running backup is asked about.
	backupPollInterval = 5 * time.Second
	// backupStartTimeout fails a backup no instance could start within it.
	backupStartTimeout = 10 * time.Minute
	// backupUnreachableTimeout fails a running backup whose instance has
	// not answered for that long.
	backupUnreachableTimeout = 10 * time.Minute
	// backupMaxReplicaLag is how far behind a replica may be and still be
	// backed up instead of the primary.
	backupMaxReplicaLag = 10
)

// DatabaseBackupReconciler runs each DatabaseBackup once: it asks an
// instance of the Database (a caught-up replica, else the primary) for a
// base backup, follows it to its end, and on deletion removes the artifacts
// when the DatabaseBackup says so.
type DatabaseBackupReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder records Events on DatabaseBackups and their Databases.
	Recorder events.EventRecorder
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=dbpilot.io,resources=databasebackups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=dbpilot.io,resources=databasebackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dbpilot.io,resources=databasebackups/finalizers,verbs=update

// SetupWithManager registers the reconciler.
func (r *DatabaseBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&dbpilotv1alpha1.DatabaseBackup{}).
		WithLogConstructor(reconcileLogger(mgr.GetLogger(), "databasebackup", dbpilotv1alpha1.GroupVersion.WithKind("DatabaseBackup"),
			backupDatabase(mgr.GetCache()))).
		Named(backupControllerName).
		Complete(r)
}

func (r *DatabaseBackupReconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Reconcile moves one DatabaseBackup through its phases.
func (r *DatabaseBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	started := time.Now()
	defer func() { observeReconcile(backupControllerName, started, result, retErr) }()
	backup := &dbpilotv1alpha1.DatabaseBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, backup); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !backup.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, backup)
	}
	if !controllerutil.ContainsFinalizer(backup, dbpilotv1alpha1.BackupFinalizer) {
		patch := client.MergeFrom(backup.DeepCopy())
		controllerutil.AddFinalizer(backup, dbpilotv1alpha1.BackupFinalizer)
		if err := r.Client.Patch(ctx, backup, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	before := backup.Status.DeepCopy()
	var next ctrl.Result
	var err error
	switch backup.Status.Phase {
	case "", dbpilotv1alpha1.BackupPhasePending:
		next, err = r.start(ctx, backup)
	case dbpilotv1alpha1.BackupPhaseRunning:
		next, err = r.follow(ctx, backup)
	default:
		return ctrl.Result{}, nil
	}
	if !equalBackupStatus(before, &backup.Status) {
		if writeErr := r.Client.Status().Update(ctx, backup); writeErr != nil {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("writing status: %w", writeErr))
		}
	}
	return next, err
}

func equalBackupStatus(a, b *dbpilotv1alpha1.DatabaseBackupStatus) bool {
	return a.Phase == b.Phase && a.Message == b.Message && a.Instance == b.Instance && a.BackupName == b.BackupName
}

// start asks an instance for the backup; a Database not ready to take one
// keeps the backup Pending, with the reason, until backupStartTimeout.
func (r *DatabaseBackupReconciler) start(ctx context.Context, backup *dbpilotv1alpha1.DatabaseBackup) (ctrl.Result, error) {
	backup.Status.Phase = dbpilotv1alpha1.BackupPhasePending
	db := &dbpilotv1alpha1.Database{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: backup.Namespace, Name: backup.Spec.DatabaseName}, db)
	switch {
	case apierrors.IsNotFound(err):
		return r.wait(backup, fmt.Sprintf("no Database named %s in the namespace", backup.Spec.DatabaseName))
	case err != nil:
		return ctrl.Result{}, err
	case db.Spec.Backup == nil:
		r.fail(backup, db, fmt.Sprintf("Database %s has no spec.backup, which says where its backups go", db.Name))
		return ctrl.Result{}, nil
	case db.Spec.Hibernate:
		r.fail(backup, db, fmt.Sprintf("Database %s hibernates (spec.hibernate): no instance runs to take the backup", db.Name))
		return ctrl.Result{}, nil
	}
	pod, err := r.backupSource(ctx, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pod == nil {
		return r.wait(backup, "waiting for a ready primary or caught-up replica to take the backup")
	}
	token, err := replicationPasswordOf(ctx, r.Client, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.instanceTarget(ctx, db, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	name := backupArtifactName(backup)
	var job layout.BackupJob
	if err := callInstance(ctx, http.MethodPost, target, layout.BackupsPath, token, 10*time.Second,
		layout.BackupRequest{Name: name}, &job); err != nil {
		return r.wait(backup, fmt.Sprintf("%s could not start the backup: %v", pod.Name, err))
	}
	now := metav1.NewTime(r.clock().Now())
	backup.Status = dbpilotv1alpha1.DatabaseBackupStatus{
		Phase: dbpilotv1alpha1.BackupPhaseRunning, Engine: db.Spec.Engine, Instance: pod.Name, BackupName: name,
		Destination: db.BackupDestination(), StartTime: &now,
	}
	r.Recorder.Eventf(backup, db, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupStarted, "Backup",
		"Backup %s of %s started on %s", name, db.Name, pod.Name)
	return ctrl.Result{RequeueAfter: backupPollInterval}, nil
}

// wait keeps a backup Pending with why, and fails it once it has waited
// backupStartTimeout.
func (r *DatabaseBackupReconciler) wait(backup *dbpilotv1alpha1.DatabaseBackup, why string) (ctrl.Result, error) {
	if r.clock().Since(backup.CreationTimestamp.Time) > backupStartTimeout {
		r.fail(backup, nil, fmt.Sprintf("not started within %s: %s", backupStartTimeout, why))
		return ctrl.Result{}, nil
	}
	backup.Status.Message = why
	return ctrl.Result{RequeueAfter: 2 * backupPollInterval}, nil
}

// follow asks the instance how the backup goes.
func (r *DatabaseBackupReconciler) follow(ctx context.Context, backup *dbpilotv1alpha1.DatabaseBackup) (ctrl.Result, error) {
	db := &dbpilotv1alpha1.Database{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: backup.Namespace, Name: backup.Spec.DatabaseName}, db); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(backup, nil, fmt.Sprintf("Database %s was deleted during the backup", backup.Spec.DatabaseName))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	unreachable := func(why string) (ctrl.Result, error) {
		if backup.Status.StartTime != nil && r.clock().Since(backup.Status.StartTime.Time) > backupUnreachableTimeout {
			r.fail(backup, db, fmt.Sprintf("%s: %s", backup.Status.Instance, why))
			return ctrl.Result{}, nil
		}
		backup.Status.Message = why
		return ctrl.Result{RequeueAfter: backupPollInterval}, nil
	}
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: backup.Status.Instance}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return unreachable("its pod is gone")
		}
		return ctrl.Result{}, err
	}
	token, err := replicationPasswordOf(ctx, r.Client, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.instanceTarget(ctx, db, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	var job layout.BackupJob
	err = callInstance(ctx, http.MethodGet, target, layout.BackupsPath+"/"+backup.Status.BackupName, token, 10*time.Second, nil, &job)
	switch {
	case answeredStatus(err) == http.StatusNotFound:
		r.fail(backup, db, fmt.Sprintf("%s restarted during the backup, which did not complete", backup.Status.Instance))
		return ctrl.Result{}, nil
	case err != nil:
		return unreachable(fmt.Sprintf("the instance does not answer: %v", err))
	}
	switch job.Phase {
	case layout.BackupCompleted:
		r.complete(backup, db, job.Manifest)
		return ctrl.Result{}, nil
	case layout.BackupFailed:
		r.fail(backup, db, job.Error)
		return ctrl.Result{}, nil
	}
	backup.Status.Message = ""
	return ctrl.Result{RequeueAfter: backupPollInterval}, nil
}

// complete records a completed backup from its manifest.
func (r *DatabaseBackupReconciler) complete(backup *dbpilotv1alpha1.DatabaseBackup, db *dbpilotv1alpha1.Database, m *layout.BackupManifest) {
	s := &backup.Status
	s.Phase, s.Message = dbpilotv1alpha1.BackupPhaseCompleted, ""
	if m != nil {
		end := metav1.NewTime(m.EndTime)
		s.CompletionTime = &end
		var stored, data int64
		for _, f := range m.Files {
			stored += f.StoredSize
			data += f.Size
		}
		s.Size, s.DataSize = kibibytes(stored), kibibytes(data)
		s.EngineVersion, s.StartPosition, s.EndPosition = m.Version, m.StartPosition, m.EndPosition
		if len(m.Files) == 1 {
			s.Checksum = "sha256:" + m.Files[0].SHA256
		}
	}
	r.Recorder.Eventf(backup, db, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupCompleted, "Backup",
		"Backup %s of %s completed: %s stored", s.BackupName, backup.Spec.DatabaseName, s.Size)
	// And on the Database, so kubectl describe shows its backups.
	r.Recorder.Eventf(db, backup, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupCompleted, "Backup",
		"Backup %s completed on %s: %s stored", backup.Name, s.Instance, s.Size)
}

// fail records a failed backup with why, and a Warning Event on it and on
// its Database.
func (r *DatabaseBackupReconciler) fail(backup *dbpilotv1alpha1.DatabaseBackup, db *dbpilotv1alpha1.Database, why string) {
	now := metav1.NewTime(r.clock().Now())
	backup.Status.Phase, backup.Status.Message, backup.Status.CompletionTime = dbpilotv1alpha1.BackupPhaseFailed, why, &now
	r.Recorder.Eventf(backup, db, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonBackupFailed, "Backup", "Backup failed: %s", why)
	if db != nil {
		r.Recorder.Eventf(db, backup, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonBackupFailed, "Backup",
			"Backup %s failed: %s", backup.Name, why)
	}
}

// backupSource is the pod to back up: a ready replica that streams and is
// at most backupMaxReplicaLag seconds behind, so the primary is not loaded;
// else the ready primary; nil when neither.
func (r *DatabaseBackupReconciler) backupSource(ctx context.Context, db *dbpilotv1alpha1.Database) (*corev1.Pod, error) {
	var replica, primary string
	for _, inst := range db.Status.Instances {
		switch {
		case !inst.Ready || inst.Fenced:
		case inst.Role == layout.RoleReplica && inst.Replicating && inst.LagSeconds != nil && *inst.LagSeconds <= backupMaxReplicaLag && replica == "":
			replica = inst.Name
		case inst.Role == layout.RolePrimary && inst.Name == db.Status.CurrentPrimary:
			primary = inst.Name
		}
	}
	for _, name := range []string{replica, primary} {
		if name == "" {
			continue
		}
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, pod)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if podReady(pod) && pod.Status.PodIP != "" && pod.DeletionTimestamp.IsZero() {
			return pod, nil
		}
	}
	return nil, nil
}

// backupArtifactName names the backup in the destination: the
// DatabaseBackup's name and the start of its UID, so a DatabaseBackup
// deleted (its artifacts retained) and created again never finds the old
// backup under its name.
func backupArtifactName(backup *dbpilotv1alpha1.DatabaseBackup) string {
	uid := string(backup.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return backup.Name + "-" + uid
}

// reconcileDelete removes the backup's artifacts when its deletionPolicy is
// Delete, through an instance of its Database (which holds the
// destination's credentials), then lets the DatabaseBackup go. When no
// instance can do it the artifacts stay, and a Warning Event says so:
// keeping a backup is never the dangerous way to fail.
func (r *DatabaseBackupReconciler) reconcileDelete(ctx context.Context, backup *dbpilotv1alpha1.DatabaseBackup) error {
	if !controllerutil.ContainsFinalizer(backup, dbpilotv1alpha1.BackupFinalizer) {
		return nil
	}
	if backup.Spec.DeletionPolicy == dbpilotv1alpha1.DeletionPolicyDelete && backup.Status.BackupName != "" &&
		backup.Status.Phase != dbpilotv1alpha1.BackupPhasePending {
		if err := r.deleteArtifacts(ctx, backup); err != nil {
			r.Recorder.Eventf(backup, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonBackupRetained, "Delete",
				"The artifacts of %s were kept: %v", backup.Status.BackupName, err)
		}
	}
	patch := client.MergeFrom(backup.DeepCopy())
	controllerutil.RemoveFinalizer(backup, dbpilotv1alpha1.BackupFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, backup, patch))
}

func (r *DatabaseBackupReconciler) deleteArtifacts(ctx context.Context, backup *dbpilotv1alpha1.DatabaseBackup) error {
	db := &dbpilotv1alpha1.Database{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: backup.Namespace, Name: backup.Spec.DatabaseName}, db); err != nil {
		return fmt.Errorf("Database %s: %w", backup.Spec.DatabaseName, err)
	}
	if dest := db.BackupDestination(); dest == nil || backup.Status.Destination == nil || !equalDestinations(*dest, *backup.Status.Destination) {
		return fmt.Errorf("Database %s no longer backs up where this backup is", db.Name)
	}
	token, err := replicationPasswordOf(ctx, r.Client, db)
	if err != nil {
		return err
	}
	var lastErr error = errors.New("no ready instance")
	for _, inst := range db.Status.Instances {
		if !inst.Ready {
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: inst.Name}, pod); err != nil {
			lastErr = err
			continue
		}
		target, err := r.instanceTarget(ctx, db, pod)
		if err != nil {
			lastErr = err
			continue
		}
		if lastErr = callInstance(ctx, http.MethodDelete, target, layout.BackupsPath+"/"+backup.Status.BackupName, token,
			2*time.Minute, nil, nil); lastErr == nil {
			r.Recorder.Eventf(backup, db, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonBackupDeleted, "Delete",
				"Deleted the artifacts of %s", backup.Status.BackupName)
			return nil
		}
	}
	return lastErr
}

// kibibytes is n bytes rounded up to KiB, which prints shorter ("4784Ki").
func kibibytes(n int64) *resource.Quantity {
	return resource.NewQuantity((n+1023)/1024*1024, resource.BinarySI)
}

func equalDestinations(a, b dbpilotv1alpha1.BackupDestination) bool {
	switch {
	case a.S3 != nil && b.S3 != nil:
		return a.S3.Endpoint == b.S3.Endpoint && a.S3.Bucket == b.S3.Bucket && a.S3.Prefix == b.S3.Prefix
	case a.Volume != nil && b.Volume != nil:
		return a.Volume.ClaimName == b.Volume.ClaimName
	}
	return false
}

// instanceTarget is how the pod's instance program is reached.
func (r *DatabaseBackupReconciler) instanceTarget(ctx context.Context, db *dbpilotv1alpha1.Database, pod *corev1.Pod) (instanceTarget, error) {
	authority, err := instanceAuthority(ctx, r.Client, db)
	if err != nil {
		return instanceTarget{}, fmt.Errorf("reading the server certificate's authority: %w", err)
	}
	return instanceTargetOf(db, authority, pod), nil
}
