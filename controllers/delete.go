package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// reconcileDelete deals with the data as deletionPolicy says, then releases
// the finalizer; the other children go with the Database through their owner
// references.
//   - Retain: every claim, the replication Secret, a generated
//     credentials Secret (without which the data could not be opened), the
//     Secrets of the users of spec.users (listed or not), the
//     certificate authority's Secret (which clients trust) and
//     the designation (which volume holds the primary's data) are
//     labelled with the Database's name and released from their owner, so
//     nothing collects them.
//   - Delete: the StatefulSet and then every claim are deleted, and the
//     finalizer stays until the claims are gone.
func (r *DatabaseReconciler) reconcileDelete(ctx context.Context, db *dbpilotv1alpha1.Database) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(db, dbpilotv1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(db.Namespace), client.MatchingLabels(db.SelectorLabels())); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing volumes: %w", err)
	}
	if db.Spec.DeletionPolicy == dbpilotv1alpha1.DeletionPolicyDelete {
		done, err := r.deleteVolumes(ctx, db, claims.Items)
		if err != nil || !done {
			return ctrl.Result{RequeueAfter: rolloutPollInterval}, err
		}
	} else if err := r.retainVolumes(ctx, db, claims.Items); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(db.DeepCopy())
	controllerutil.RemoveFinalizer(db, dbpilotv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, db, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

func (r *DatabaseReconciler) deleteVolumes(ctx context.Context, db *dbpilotv1alpha1.Database, claims []corev1.PersistentVolumeClaim) (bool, error) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.StatefulSetName()}}
	if err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting StatefulSet: %w", err)
	}
	for i := range claims {
		if !claims[i].DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, &claims[i]); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting volume %s: %w", claims[i].Name, err)
		}
	}
	if len(claims) == 0 {
		return true, nil
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonVolumeDeleted, "Delete",
		"Deleting %d volumes (deletionPolicy Delete)", len(claims))
	return false, nil
}

func (r *DatabaseReconciler) retainVolumes(ctx context.Context, db *dbpilotv1alpha1.Database, claims []corev1.PersistentVolumeClaim) error {
	for i := range claims {
		if err := r.release(ctx, db, &claims[i]); err != nil {
			return fmt.Errorf("retaining volume %s: %w", claims[i].Name, err)
		}
	}
	// The Secrets dbpilot generated go with the volumes: the data there
	// was written with their passwords (a replica's volume holds the
	// replication password it streams with), clients trust the
	// certificate authority, and hold certificates of the client one.
	generated := []string{db.ReplicationSecretName(), db.CertificateAuthoritySecretName(), db.ClientAuthoritySecretName()}
	if db.GeneratesCredentials() {
		generated = append(generated, db.CredentialsSecretName())
	}
	// Every user's Secret, listed or not (a user removed and listed again
	// logs in with it).
	users := &corev1.SecretList{}
	if err := r.Client.List(ctx, users, client.InNamespace(db.Namespace),
		client.MatchingLabels(db.SelectorLabels()), client.HasLabels{dbpilotv1alpha1.LabelUser}); err != nil {
		return fmt.Errorf("listing the users' Secrets: %w", err)
	}
	for i := range users.Items {
		if !metav1.IsControlledBy(&users.Items[i], db) {
			continue
		}
		if err := r.release(ctx, db, &users.Items[i]); err != nil {
			return fmt.Errorf("retaining Secret %s: %w", users.Items[i].Name, err)
		}
	}
	for _, name := range generated {
		secret := &corev1.Secret{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, secret)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("reading Secret %s: %w", name, err)
		}
		if err == nil {
			if err := r.release(ctx, db, secret); err != nil {
				return fmt.Errorf("retaining Secret %s: %w", name, err)
			}
		}
	}
	// So does the designation: which volume holds the primary's data is
	// known only there once a failover has moved it.
	designation := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.DesignationConfigMapName()}, designation)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading the designation: %w", err)
	}
	if err == nil {
		if err := r.release(ctx, db, designation); err != nil {
			return fmt.Errorf("retaining the designation: %w", err)
		}
	}
	if len(claims) > 0 {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonVolumeRetained, "Retain",
			"Kept %d volumes and the credentials, labelled %s=%s", len(claims), dbpilotv1alpha1.LabelRetainedFrom, db.Name)
	}
	return nil
}

// release labels obj as retained from db and removes db's owner reference.
func (r *DatabaseReconciler) release(ctx context.Context, db *dbpilotv1alpha1.Database, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[dbpilotv1alpha1.LabelRetainedFrom] = db.Name
	obj.SetLabels(labels)
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID != db.UID {
			refs = append(refs, ref)
		}
	}
	obj.SetOwnerReferences(refs)
	return r.Client.Patch(ctx, obj, patch)
}
