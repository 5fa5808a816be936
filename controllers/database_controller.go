// Package controllers holds dbpilot's reconcilers. The Database reconciler is
// the only writer of a Database's children (StatefulSet, Services, Secret,
// ConfigMap, PodDisruptionBudget) and of its status outside
// status.autopilot.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

// FieldOwner is the field manager of everything the Database reconciler
// applies; the auto-pilot has its own.
const FieldOwner = "dbpilot-database-controller"

// rolloutPollInterval is how often a Database is looked at again while pods
// roll or volumes are released, on top of the watch events that drive it.
const rolloutPollInterval = 5 * time.Second

// DatabaseReconciler drives each Database towards its spec.
type DatabaseReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads uncached, for the user's own credentials Secret, which
	// the cache (limited to dbpilot's Secrets) does not hold.
	APIReader client.Reader
	// Recorder records Events on Databases.
	Recorder events.EventRecorder
	// Clock tells the time for condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// Images is the image catalog (operand images and the operator's own,
	// which carries the instance program); the upstream defaults when zero.
	Images imagecatalog.Catalog
	// Namespaces are the namespaces the manager watches, nil for all; the
	// users' credentials Secrets are watched there.
	Namespaces []string
	// InPlaceResize: the API server serves pods/resize, so a tier change
	// resizes the running pods instead of restarting them.
	InPlaceResize bool
	// StageMountTimeout is how long each step of a staged change of
	// certificate authority waits for every pod to report the files of
	// the step before, then goes on without them; 5 minutes when zero.
	StageMountTimeout time.Duration
	// ClientAuthorityOverlap is how long a replaced client authority
	// stays trusted after the application user's certificate is issued
	// from the new one, for clients to take it; 5 minutes when zero.
	ClientAuthorityOverlap time.Duration

	// failures tells transient errors from lasting ones.
	failures failures
}

func (r *DatabaseReconciler) images() imagecatalog.Catalog {
	if r.Images.Instance == "" {
		return imagecatalog.Default()
	}
	return r.Images
}

// +kubebuilder:rbac:groups=dbpilot.io,resources=databases,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dbpilot.io,resources=databases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dbpilot.io,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups=dbpilot.io,resources=databasebackups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Leader election (a namespaced Role) and the metrics endpoint's token and
// access reviews (metrics-auth-role) are granted in config/rbac, not here.

// SetupWithManager registers the reconciler with the manager: it watches
// Databases and the children they own, and pods through their Database label.
func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	if err := RegisterMetrics(); err != nil {
		return fmt.Errorf("registering dbpilot's metrics: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podNodeField, podNode); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&dbpilotv1alpha1.Database{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, autopilotChanged{}))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(databaseOfPod)).
		Watches(&dbpilotv1alpha1.DatabaseBackup{}, handler.EnqueueRequestsFromMapFunc(databaseOfBackup)).
		// A primary whose node starts being drained is handed over.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.databasesWithPrimaryOn), builder.WithPredicates(drainChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		WithLogConstructor(reconcileLogger(mgr.GetLogger(), "database", dbpilotv1alpha1.GroupVersion.WithKind("Database"),
			func(req reconcile.Request) string { return req.Name })).
		Named(databaseControllerName)
	b, err := r.watchUserSecrets(mgr, b)
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// Reconcile brings one Database's children and status in line with its spec.
// Status is written once, at the end, and only when it changed.
func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	started := time.Now()
	defer func() { observeReconcile(databaseControllerName, started, result, retErr) }()
	db := &dbpilotv1alpha1.Database{}
	if err := r.Client.Get(ctx, req.NamespacedName, db); err != nil {
		if apierrors.IsNotFound(err) {
			r.failures.forget(req.NamespacedName)
			forgetDatabaseMetrics(req.NamespacedName)
			instanceTransports.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !db.DeletionTimestamp.IsZero() {
		r.failures.forget(req.NamespacedName)
		return r.reconcileDelete(ctx, db)
	}
	if !controllerutil.ContainsFinalizer(db, dbpilotv1alpha1.Finalizer) {
		patch := client.MergeFrom(db.DeepCopy())
		controllerutil.AddFinalizer(db, dbpilotv1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, db, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	s := &scope{db: db}
	defer func() {
		if err := r.writeStatus(ctx, s, retErr); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	if db.Spec.Paused {
		return ctrl.Result{}, errors.Join(r.observe(ctx, s), r.observeServerCertificate(ctx, db), r.observeClientCertificate(ctx, db))
	}
	return r.reconcileNormal(ctx, s)
}

// phase is one step of reconcileNormal. A phase that needs the Database to
// be looked at again soon returns a non-zero RequeueAfter.
type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

func (r *DatabaseReconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	if pending, err := r.predecessorChild(ctx, s.db); err != nil || pending != "" {
		s.predecessorPending = pending
		return ctrl.Result{RequeueAfter: predecessorPoll}, err
	}
	phases := []phase{
		r.reconcileCredentials,
		r.reconcileReplicationSecret,
		r.reconcileUsers,
		r.reconcileMetricsSecret,
		r.reconcileClientAuthority,
		r.reconcileTLS,
		r.reconcileClientCertificate,
		r.reconcileConfigMap,
		r.reconcileDesignation,
		r.reconcileRestoreSource,
		r.reconcileBackupClaim,
		r.reconcileStatefulSet,
		r.reconcileServices,
		r.reconcileVolumes,
		r.reconcilePodRoles,
		r.reconcilePodDisruptionBudget,
		r.reconcileBackups,
	}
	var result ctrl.Result
	for _, run := range phases {
		res, err := run(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = soonest(result, res)
	}
	// A problem with a Secret of the user's (credentials, server
	// certificate) shows in Degraded and is not an error: only the user
	// can fix it, their Secret is watched, and an error would drop this
	// pass's requeues, which keep failover and scheduled backups on time
	// for the pods that run meanwhile.
	return result, nil
}

// soonest merges two results, keeping the earliest requeue.
func soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter != 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

// databaseOfBackup maps a DatabaseBackup to the Database it backs up (or
// a Database that restores it is woken by its own requeue).
func databaseOfBackup(_ context.Context, obj client.Object) []ctrl.Request {
	b, ok := obj.(*dbpilotv1alpha1.DatabaseBackup)
	if !ok {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.DatabaseName}}}
}

// databaseOfPod maps a pod to the Database named by its label.
func databaseOfPod(_ context.Context, obj client.Object) []ctrl.Request {
	name, ok := obj.GetLabels()[dbpilotv1alpha1.LabelDatabase]
	if !ok || obj.GetLabels()[dbpilotv1alpha1.LabelManagedBy] != dbpilotv1alpha1.ManagedByValue {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
