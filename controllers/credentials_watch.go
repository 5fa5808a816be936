package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// userSecretIndex indexes Databases by the user's Secrets they name:
// spec.credentialsSecretName, spec.tls.serverCertificateSecretName and
// spec.users[].passwordSecret.name.
const userSecretIndex = "userSecrets"

// watchUserSecrets makes a change to a user's Secret that a Database names
// (created, keys added, a certificate renewed, deleted) reconcile the
// Databases that name it. The manager's cache holds only the Secrets
// dbpilot labelled, so the user's Secrets are watched by a cache of their
// own that keeps each Secret's identity only (secretIdentity): names and
// resource versions, never a value.
func (r *DatabaseReconciler) watchUserSecrets(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &dbpilotv1alpha1.Database{}, userSecretIndex, userSecretsOf); err != nil {
		return nil, fmt.Errorf("indexing Databases by the user's Secrets: %w", err)
	}
	opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultTransform: secretIdentity}
	if len(r.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range r.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	secrets, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the user Secrets' metadata cache: %w", err)
	}
	if err := mgr.Add(secrets); err != nil {
		return nil, err
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return b.WatchesRawSource(source.Kind(secrets, secret,
		handler.TypedEnqueueRequestsFromMapFunc(r.databasesNamingSecret))), nil
}

// userSecretsOf lists the user's Secrets a Database names.
func userSecretsOf(obj client.Object) []string {
	db := obj.(*dbpilotv1alpha1.Database)
	var names []string
	for _, name := range []string{db.Spec.CredentialsSecretName, db.ProvidedServerCertificateSecretName()} {
		if name != "" {
			names = append(names, name)
		}
	}
	for _, u := range db.Spec.Users {
		if u.PasswordSecret != nil {
			names = append(names, u.PasswordSecret.Name)
		}
	}
	return names
}

// databasesNamingSecret lists the Databases that name the Secret.
func (r *DatabaseReconciler) databasesNamingSecret(ctx context.Context, secret *metav1.PartialObjectMetadata) []reconcile.Request {
	list := &dbpilotv1alpha1.DatabaseList{}
	if err := r.Client.List(ctx, list, client.InNamespace(secret.Namespace), client.MatchingFields{userSecretIndex: secret.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Databases that name a Secret", "secret", secret.Name)
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// secretIdentity trims a Secret's metadata to what names it and tells a
// change: every Secret of the watched namespaces is in this cache, and
// their labels, annotations and managed fields are most of their metadata.
// The last-applied-configuration annotation kubectl apply writes holds a
// Secret's values, so dropping annotations also keeps every value out of
// the manager's memory.
func secretIdentity(in any) (any, error) {
	secret, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	secret.ObjectMeta = metav1.ObjectMeta{
		Name:              secret.Name,
		Namespace:         secret.Namespace,
		UID:               secret.UID,
		ResourceVersion:   secret.ResourceVersion,
		DeletionTimestamp: secret.DeletionTimestamp,
	}
	return secret, nil
}
