package controllers

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// reconcileTLS keeps the Database's certificate authority and the server
// certificate its pods serve. The authority is created once, or read from
// a Secret of its name that exists already (one the user brought, or kept
// from a deleted Database of the same name); one that cannot sign is an
// error naming the Secret, never overwritten. The server certificate is
// issued when it is missing, when the names or the authority changed, and
// pki.RenewBefore its expiry; the pods take the new one without a restart.
// The Database is looked at again when it is due.
func (r *DatabaseReconciler) reconcileTLS(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	now := r.clock().Now()
	authority, err := r.certificateAuthority(ctx, db, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, secret); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	current := pki.KeyPair{CertPEM: secret.Data[layout.KeyTLSCert], KeyPEM: secret.Data[layout.KeyTLSKey]}
	reason, renewAt := pki.ServerRenewal(current, authority, db.ServerNames(), now)
	if reason == "" && !bytes.Equal(secret.Data[layout.KeyCACert], authority.CertPEM) {
		reason = "the authority's certificate it carries is not the authority's"
	}
	if reason == "" {
		return ctrl.Result{RequeueAfter: renewAt.Sub(now)}, nil
	}
	server, err := pki.IssueServer(authority, db.ServerNames(), now)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("issuing the server certificate: %w", err)
	}
	wanted := desired.ServerCertificateSecret(db, server, authority.CertPEM)
	if secret.Name == "" {
		if err := r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
	} else {
		secret.Data = wanted.Data
		if err := r.Client.Update(ctx, secret, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("renewing Secret %s: %w", key.Name, err)
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonCertificateIssued, "IssueCertificate",
			"Issued the server certificate in Secret %s again: %s", key.Name, reason)
	}
	return ctrl.Result{RequeueAfter: pki.ServerValidity - pki.RenewBefore}, nil
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
