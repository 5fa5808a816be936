package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbpilot/dbpilot/controllers/desired"
)

// reconcileConfigMap applies the engine configuration.
func (r *DatabaseReconciler) reconcileConfigMap(ctx context.Context, s *scope) (ctrl.Result, error) {
	cm := desired.ConfigMap(s.db)
	existing := &corev1.ConfigMap{}
	owned, err := extractor(ctx, r.Client, *cm.Namespace, *cm.Name, existing, func() (*corev1ac.ConfigMapApplyConfiguration, error) {
		return corev1ac.ExtractConfigMap(existing, FieldOwner)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := applyIfChanged(ctx, r.Client, cm, owned); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying ConfigMap: %w", err)
	}
	return ctrl.Result{}, nil
}

// reconcileServices applies the headless, read-write and read-only
// Services, and those spec.expose asks for.
func (r *DatabaseReconciler) reconcileServices(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{
		desired.HeadlessService(s.db),
		desired.ReadWriteService(s.db),
		desired.ReadOnlyService(s.db, s.replicas),
	} {
		existing := &corev1.Service{}
		owned, err := extractor(ctx, r.Client, *svc.Namespace, *svc.Name, existing, func() (*corev1ac.ServiceApplyConfiguration, error) {
			return corev1ac.ExtractService(existing, FieldOwner)
		})
		if err != nil {
			return ctrl.Result{}, err
		}
		if _, err := applyIfChanged(ctx, r.Client, svc, owned); err != nil {
			return ctrl.Result{}, fmt.Errorf("applying Service %s: %w", *svc.Name, err)
		}
	}
	if err := r.reconcileExternalServices(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.exposeProblem != "" {
		// The user's Service is not watched.
		return ctrl.Result{RequeueAfter: exposeConflictPoll}, nil
	}
	return ctrl.Result{}, nil
}

// reconcilePodDisruptionBudget applies the budgets while the StatefulSet
// runs two pods or more and removes them with one, where they would only
// block node drains: one for the replicas (every pod of a MySQL Database),
// and one that keeps the primary from eviction where it moves.
func (r *DatabaseReconciler) reconcilePodDisruptionBudget(ctx context.Context, s *scope) (ctrl.Result, error) {
	// The replicas' budget first: one that still covered the primary
	// beside the primary's would leave it under two, which the API server
	// refuses to evict at all.
	if err := r.reconcileBudget(ctx, desired.PodDisruptionBudget(s.db, s.replicas), desired.NeedsPodDisruptionBudget(s.replicas)); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileBudget(ctx, desired.PrimaryPodDisruptionBudget(s.db), desired.NeedsPrimaryPodDisruptionBudget(s.db, s.replicas)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// reconcileBudget applies the budget when needed and deletes one dbpilot
// applied when not.
func (r *DatabaseReconciler) reconcileBudget(ctx context.Context, pdb *policyv1ac.PodDisruptionBudgetApplyConfiguration, needed bool) error {
	existing := &policyv1.PodDisruptionBudget{}
	owned, err := extractor(ctx, r.Client, *pdb.Namespace, *pdb.Name, existing, func() (*policyv1ac.PodDisruptionBudgetApplyConfiguration, error) {
		return policyv1ac.ExtractPodDisruptionBudget(existing, FieldOwner)
	})
	if err != nil {
		return err
	}
	if !needed {
		if owned == nil {
			return nil
		}
		if err := r.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting PodDisruptionBudget %s: %w", *pdb.Name, err)
		}
		return nil
	}
	if _, err := applyIfChanged(ctx, r.Client, pdb, owned); err != nil {
		return fmt.Errorf("applying PodDisruptionBudget %s: %w", *pdb.Name, err)
	}
	return nil
}

// extractor reads the live object into existing and returns what the
// reconciler owns on it, or nil when the object does not exist.
func extractor[T any](ctx context.Context, c client.Client, namespace, name string, existing client.Object, extract func() (T, error)) (*liveOwned[T], error) {
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, existing)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %T %s: %w", existing, name, err)
	}
	return &liveOwned[T]{hash: existing.GetAnnotations()[OwnedFieldsHashAnnotation], extract: extract}, nil
}
