package controllers

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// reconcileTLS keeps the server certificate the Database's pods serve, in
// the Secret they mount: a copy of the user's when the spec names one
// (reconcileProvidedCertificate), else one of the Database's own authority.
// The authority is created once, or read from a Secret of its name that
// exists already (one the user brought, or kept from a deleted Database of
// the same name); one that cannot sign is an error naming the Secret, never
// overwritten. The server certificate is issued when it is missing, when
// the names or the authority changed, and pki.RenewBefore its expiry; the
// pods take the new one without a restart. The Database is looked at again
// when it is due.
func (r *DatabaseReconciler) reconcileTLS(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	now := r.clock().Now()
	current, err := r.serverCertificate(ctx, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	if provided := db.ProvidedServerCertificateSecretName(); provided != "" {
		return r.reconcileProvidedCertificate(ctx, s, current, provided, now)
	}
	authority, err := r.certificateAuthority(ctx, db, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	pair := pki.KeyPair{CertPEM: current.Data[layout.KeyTLSCert], KeyPEM: current.Data[layout.KeyTLSKey]}
	reason, renewAt := pki.ServerRenewal(pair, authority, db.ServerNames(), now)
	if reason == "" && !bytes.Equal(current.Data[layout.KeyCACert], authority.CertPEM) {
		reason = "the authority's certificate it carries is not the authority's"
	}
	if reason == "" {
		return ctrl.Result{RequeueAfter: renewAt.Sub(now)}, nil
	}
	server, err := pki.IssueServer(authority, db.ServerNames(), now)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("issuing the server certificate: %w", err)
	}
	err = r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, server, authority.CertPEM),
		dbpilotv1alpha1.EventReasonCertificateIssued, "IssueCertificate", "Issued the server certificate in Secret %s again: %s", db.ServerCertificateSecretName(), reason)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: pki.ServerValidity - pki.RenewBefore}, nil
}

// reconcileProvidedCertificate copies the user's server certificate, from
// the Secret named provided, into the one the pods mount, when it is
// usable (pki.ProvidedServer, for every name the Database is reached by)
// and differs. An unusable one is not copied, so the pods keep serving the
// last good one, and the Database shows why (s.tlsProblem) until the user's
// Secret changes (watchUserSecrets) or, not valid yet, until it is. dbpilot
// never renews it: it looks again at its expiry, to report it expired.
func (r *DatabaseReconciler) reconcileProvidedCertificate(ctx context.Context, s *scope, current *corev1.Secret, provided string, now time.Time) (ctrl.Result, error) {
	db := s.db
	field := "spec.tls.serverCertificateSecretName: Secret " + provided
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: provided}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			s.tlsProblem = field + " does not exist"
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("%s: reading it: %w", field, err)
	}
	var missing []string
	for _, key := range []string{layout.KeyTLSCert, layout.KeyTLSKey, layout.KeyCACert} {
		if len(secret.Data[key]) == 0 {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		s.tlsProblem = fmt.Sprintf("%s lacks the keys %s", field, strings.Join(missing, ", "))
		return ctrl.Result{}, nil
	}
	pair := pki.KeyPair{CertPEM: secret.Data[layout.KeyTLSCert], KeyPEM: secret.Data[layout.KeyTLSKey]}
	validity, problem := pki.ProvidedServer(pair, secret.Data[layout.KeyCACert], db.ServerNames(), now)
	if problem != "" {
		s.tlsProblem = field + ": " + problem
		if validFrom := validity.NotBefore.Add(-pki.ClockSkew); validFrom.After(now) {
			return ctrl.Result{RequeueAfter: validFrom.Sub(now)}, nil
		}
		return ctrl.Result{}, nil
	}
	wanted := desired.ServerCertificateSecret(db, pair, secret.Data[layout.KeyCACert])
	if current.Name == "" || !maps.EqualFunc(current.Data, wanted.Data, bytes.Equal) {
		err := r.writeServerCertificate(ctx, db, current, wanted, dbpilotv1alpha1.EventReasonCertificateCopied, "CopyCertificate",
			"Copied the server certificate of Secret %s into Secret %s", provided, db.ServerCertificateSecretName())
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: validity.NotAfter.Sub(now)}, nil
}

// serverCertificate reads the Secret the pods mount; one without a name
// when it does not exist.
func (r *DatabaseReconciler) serverCertificate(ctx context.Context, db *dbpilotv1alpha1.Database) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}
	if err := r.Client.Get(ctx, key, secret); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	return secret, nil
}

// writeServerCertificate creates the Secret the pods mount as wanted
// (the Database's creation says enough), or writes wanted's data into
// current and records the Event format tells.
func (r *DatabaseReconciler) writeServerCertificate(ctx context.Context, db *dbpilotv1alpha1.Database, current, wanted *corev1.Secret, reason, action, format string, args ...any) error {
	if current.Name == "" {
		if err := r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("creating Secret %s: %w", wanted.Name, err)
		}
		return nil
	}
	current.Data = wanted.Data
	if err := r.Client.Update(ctx, current, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("writing Secret %s: %w", current.Name, err)
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, reason, action, format, args...)
	return nil
}

// certificateAuthority reads the Database's authority, creating it when its
// Secret does not exist.
func (r *DatabaseReconciler) certificateAuthority(ctx context.Context, db *dbpilotv1alpha1.Database, now time.Time) (pki.KeyPair, error) {
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.CertificateAuthoritySecretName()}
	secret, _, err := r.createOrReadSecret(ctx, key, func() (*corev1.Secret, error) {
		authority, err := pki.NewAuthority(db.Name+"."+db.Namespace+" certificate authority", now)
		if err != nil {
			return nil, err
		}
		return desired.CertificateAuthoritySecret(db, authority), nil
	})
	if err != nil {
		return pki.KeyPair{}, err
	}
	authority := pki.KeyPair{CertPEM: secret.Data[layout.KeyCACert], KeyPEM: secret.Data[layout.KeyCAKey]}
	if problem := pki.AuthorityProblem(authority, now); problem != "" {
		return pki.KeyPair{}, fmt.Errorf("the certificate authority in Secret %s (keys %s and %s) cannot sign the server certificate: %s; delete it for dbpilot to create a new authority",
			key.Name, layout.KeyCACert, layout.KeyCAKey, problem)
	}
	return authority, nil
}
