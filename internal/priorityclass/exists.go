// Package priorityclass reads PriorityClasses, a cluster-scoped kind: a pod
// that names one that does not exist is refused by the API server, so the
// operator checks before its StatefulSet asks for such pods. Its RBAC
// marker adds to the manager's cluster role (config/rbac/cluster_role.yaml).
package priorityclass

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Exists reports whether the PriorityClass name exists.
func Exists(ctx context.Context, reader client.Reader, name string) (bool, error) {
	err := reader.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
	if err == nil {
		return true, nil
	}
	return false, client.IgnoreNotFound(err)
}
