package controllers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// reconcileReplicationSecret creates the Secret of the replication and
// monitoring users' passwords once, and adds a key it lacks; a value it holds
// is never changed.
func (r *DatabaseReconciler) reconcileReplicationSecret(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, r.ensureGeneratedSecret(ctx, s.db.Namespace, s.db.ReplicationSecretName(), desired.InternalKeys,
		func() (*corev1.Secret, error) {
			var passwords desired.InternalPasswords
			var err error
			if passwords.Replication, err = randomPassword(); err != nil {
				return nil, err
			}
			if passwords.Monitoring, err = randomPassword(); err != nil {
				return nil, err
			}
			return desired.ReplicationSecret(s.db, passwords), nil
		})
}

// reconcileMetricsSecret creates the namespace's Secret of the metrics
// endpoints' token once, like the replication Secret.
func (r *DatabaseReconciler) reconcileMetricsSecret(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, r.ensureGeneratedSecret(ctx, s.db.Namespace, dbpilotv1alpha1.MetricsSecretName, desired.MetricsKeys,
		func() (*corev1.Secret, error) {
			token, err := randomPassword()
			if err != nil {
				return nil, err
			}
			return desired.MetricsSecret(s.db.Namespace, token), nil
		})
}

// ensureGeneratedSecret creates a Secret dbpilot generates when it is
// missing and adds the keys it lacks from a newly generated one; a value it
// holds is never changed.
func (r *DatabaseReconciler) ensureGeneratedSecret(ctx context.Context, namespace, name string, keys []string, generate func() (*corev1.Secret, error)) error {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	missing := secret.Name == ""
	for _, key := range keys {
		missing = missing || len(secret.Data[key]) == 0
	}
	if !missing {
		return nil
	}
	wanted, err := generate()
	if err != nil {
		return err
	}
	if secret.Name == "" {
		err = r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
		return nil
	}
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	for _, key := range keys {
		if len(secret.Data[key]) == 0 {
			secret.Data[key] = wanted.Data[key]
		}
	}
	if err := r.Client.Patch(ctx, secret, patch, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("adding keys to Secret %s: %w", name, err)
	}
	return nil
}

// reconcileCredentials makes sure the credentials Secret exists and holds
// every key. A generated Secret is created once and never written again; a
// user's Secret is only read. Problems are reported by key name, never value.
func (r *DatabaseReconciler) reconcileCredentials(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.CredentialsSecretName()}
	secret := &corev1.Secret{}
	if !db.GeneratesCredentials() {
		if err := r.APIReader.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				// The Secret's creation reconciles the Database again
				// (watchUserSecrets).
				s.credentialsProblem = fmt.Sprintf("Secret %s named by spec.credentialsSecretName does not exist", key.Name)
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("reading credentials Secret: %w", err)
		}
		if problem := missingKeysProblem(secret, desired.CredentialKeys); problem != "" {
			s.credentialsProblem = "spec.credentialsSecretName: " + problem
		}
		s.applicationUser = strings.TrimRight(string(secret.Data[desired.SecretKeyUsername]), "\n")
		if layout.IsReservedUser(string(db.Spec.Engine), s.applicationUser) {
			s.credentialsProblem = fmt.Sprintf("spec.credentialsSecretName: Secret %s key %s names %q, a user dbpilot keeps for itself; the application user needs another name",
				key.Name, desired.SecretKeyUsername, s.applicationUser)
		}
		return ctrl.Result{}, nil
	}

	secret, created, err := r.createOrReadSecret(ctx, key, func() (*corev1.Secret, error) {
		creds, err := generateCredentials()
		if err != nil {
			return nil, err
		}
		return desired.CredentialsSecret(db, creds), nil
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	s.applicationUser = strings.TrimRight(string(secret.Data[desired.SecretKeyUsername]), "\n")
	if created {
		if db.Status.CredentialsSecret == key.Name {
			// It existed, and someone deleted it: the new passwords
			// reach the running pods through the mounted Secret, so
			// dbpilot keeps its access; the application needs the new
			// password.
			r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonCredentialsRegenerated, "RegenerateCredentials",
				"Secret %s was deleted: new passwords were generated into it and are applied to the running database; clients must use the new password", key.Name)
		}
		return ctrl.Result{}, nil
	}
	s.credentialsProblem = missingKeysProblem(secret, desired.CredentialKeys)
	return ctrl.Result{}, nil
}

// createOrReadSecret creates the Secret generate makes when the cache
// does not hold one of its name, and reports whether it did. One that
// exists all the same but that the cache (dbpilot's labelled Secrets only)
// does not hold, a user's own, is read from the API server and never
// replaced.
func (r *DatabaseReconciler) createOrReadSecret(ctx context.Context, key client.ObjectKey, generate func() (*corev1.Secret, error)) (*corev1.Secret, bool, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		wanted, genErr := generate()
		if genErr != nil {
			return nil, false, genErr
		}
		err = r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner))
		if err == nil {
			return wanted, true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		err = r.APIReader.Get(ctx, key, secret)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	return secret, false, nil
}

// missingKeysProblem names the keys of keys the Secret lacks, sorted.
func missingKeysProblem(secret *corev1.Secret, keys []string) string {
	var missing []string
	for _, key := range keys {
		if len(secret.Data[key]) == 0 {
			missing = append(missing, key)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	return fmt.Sprintf("Secret %s lacks the keys %s", secret.Name, strings.Join(missing, ", "))
}

// generateCredentials draws new passwords from crypto/rand: 32 characters of
// URL-safe base64 (192 bits), safe in connection strings and config files.
func generateCredentials() (desired.Credentials, error) {
	password, err := randomPassword()
	if err != nil {
		return desired.Credentials{}, err
	}
	superuser, err := randomPassword()
	if err != nil {
		return desired.Credentials{}, err
	}
	return desired.Credentials{Password: password, SuperuserPassword: superuser}, nil
}

func randomPassword() (string, error) {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("reading random bytes for a password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(buf), nil
}
