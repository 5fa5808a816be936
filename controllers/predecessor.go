package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// predecessorPoll is how soon a Database waiting for its predecessor's
// children to be collected is looked at again.
const predecessorPoll = 2 * time.Second

// predecessorChild names a child that a deleted Database of the same name
// still owns, or is being deleted: its designation or a Secret dbpilot
// generated. Recreated at once after a deletion under deletionPolicy
// Delete, a Database would otherwise read the predecessor's designation
// and passwords, then lose them to the garbage collector. Children a
// deletion under Retain released have no owner, and are adopted.
func (r *DatabaseReconciler) predecessorChild(ctx context.Context, db *dbpilotv1alpha1.Database) (string, error) {
	children := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: db.DesignationConfigMapName()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: db.ReplicationSecretName()}},
	}
	if db.GeneratesCredentials() {
		children = append(children, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: db.CredentialsSecretName()}})
	}
	for _, u := range db.Spec.Users {
		if u.PasswordSecret == nil {
			children = append(children, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: db.UserSecretName(u.Name)}})
		}
	}
	for _, child := range children {
		kind := "ConfigMap"
		if _, ok := child.(*corev1.Secret); ok {
			kind = "Secret"
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: child.GetName()}, child)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading %s %s: %w", kind, child.GetName(), err)
		}
		owner := metav1.GetControllerOf(child)
		switch {
		case owner != nil && owner.Kind == "Database" && owner.UID != db.UID:
			return fmt.Sprintf("%s %s still belongs to a deleted Database named %s (uid %s); waiting for Kubernetes to collect it",
				kind, child.GetName(), owner.Name, owner.UID), nil
		case !child.GetDeletionTimestamp().IsZero():
			return fmt.Sprintf("%s %s is being deleted; waiting for it to be gone", kind, child.GetName()), nil
		}
	}
	return "", nil
}
