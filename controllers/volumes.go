package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbpilot/dbpilot/internal/storageclass"
)

// reconcileVolumes grows every claim of the Database to spec.storage.size.
// The claim template cannot change, so each claim is expanded directly, and
// only when its StorageClass allows expansion. Claims never shrink.
func (r *DatabaseReconciler) reconcileVolumes(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(db.Namespace), client.MatchingLabels(db.SelectorLabels())); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing volumes: %w", err)
	}
	want := db.EffectiveStorageSize()
	for i := range claims.Items {
		claim := &claims.Items[i]
		current := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		if current.Cmp(want) >= 0 || !claim.DeletionTimestamp.IsZero() {
			continue
		}
		expandable, err := storageclass.AllowsExpansion(ctx, r.Client, claim)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !expandable {
			s.volumeProblem = fmt.Sprintf("spec.storage.size: volume %s cannot grow to %s: its StorageClass does not allow volume expansion", claim.Name, want.String())
			continue
		}
		patch := client.MergeFrom(claim.DeepCopy())
		claim.Spec.Resources.Requests[corev1.ResourceStorage] = want
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("growing volume %s: %w", claim.Name, err)
		}
	}
	return ctrl.Result{}, nil
}
