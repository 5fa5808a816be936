// Package storageclass reads StorageClasses, to know whether a claim's
// volume may grow. Its RBAC marker, with internal/priorityclass's, generates
// the manager's cluster role (config/rbac/cluster_role.yaml) of the
// cluster-scoped kinds, which every install mode grants cluster-wide; every
// other permission is namespaced and is granted only in the namespaces the
// operator watches.
package storageclass

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// AllowsExpansion reports whether the claim's StorageClass allows volume
// expansion; a claim without a class, or a class that is gone, does not.
func AllowsExpansion(ctx context.Context, reader client.Reader, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
		return false, nil
	}
	class := &storagev1.StorageClass{}
	if err := reader.Get(ctx, client.ObjectKey{Name: *claim.Spec.StorageClassName}, class); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return class.AllowVolumeExpansion != nil && *class.AllowVolumeExpansion, nil
}
