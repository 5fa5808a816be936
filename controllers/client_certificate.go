package controllers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// reconcileClientAuthority reads the authority of the Database's client
// certificates, created once (or read from a Secret of its name that
// exists already, as the server authority is). reconcileTLS has the
// engines trust it (stageClientAuthority), and reconcileClientCertificate
// issues the application user's certificate from it.
func (r *DatabaseReconciler) reconcileClientAuthority(ctx context.Context, s *scope) (ctrl.Result, error) {
	authority, problem, err := r.clientAuthority(ctx, s.db, r.clock().Now())
	if err != nil || problem != "" {
		// A problem only the user can fix holds back nothing else: the
		// pods keep trusting the authorities they have.
		s.clientCertificateProblem = problem
		return ctrl.Result{}, err
	}
	s.clientAuthority = authority
	return ctrl.Result{}, nil
}

// reconcileClientCertificate keeps the application user's client
// certificate in <name>-app-tls: issued when it is missing, not the
// user's or not the client authority's, and pki.RenewBefore its expiry;
// a renewed copy of its authority is written beside it, and the
// certificate kept.
// One from a former authority is issued again only once every pod's
// engine verifies with the new one (s.clientAuthorityTrusted), so that
// the new certificate is never refused. Whether the certificate is
// required changes nothing here: it is issued either way, so that clients
// can take it first. dbpilot_client_certificate_expiry_timestamp_seconds
// follows it (observeClientCertificate).
func (r *DatabaseReconciler) reconcileClientCertificate(ctx context.Context, s *scope) (result ctrl.Result, err error) {
	defer func() { err = errors.Join(err, r.observeClientCertificate(ctx, s.db)) }()
	db := s.db
	now := r.clock().Now()
	authority := s.clientAuthority
	if authority.CertPEM == nil || s.applicationUser == "" {
		// The authority's or the credentials Secret's problem is
		// Degraded's to tell.
		return ctrl.Result{}, nil
	}
	if db.RequiresClientCertificate() {
		s.clientCertificateProblem = certificateUserProblem(db, s.applicationUser)
	}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ApplicationCertificateSecretName()}
	current := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, current); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	if current.Name == "" {
		// The cache holds dbpilot's Secrets only: one of the user's is
		// never written; one of dbpilot's it does not hold yet was just
		// created.
		found := &corev1.Secret{}
		err := r.APIReader.Get(ctx, key, found)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
		case err == nil && metav1.IsControlledBy(found, db):
			return ctrl.Result{RequeueAfter: time.Second}, nil
		case err == nil:
			s.clientCertificateProblem = fmt.Sprintf("Secret %s exists and is not dbpilot's: dbpilot writes the application user's client certificate there; delete or rename it", key.Name)
			return ctrl.Result{}, nil
		}
	}
	held := pki.KeyPair{CertPEM: current.Data[layout.KeyTLSCert], KeyPEM: current.Data[layout.KeyTLSKey]}
	reason, renewAt := pki.ClientRenewal(held, authority, s.applicationUser, now)
	switch {
	case reason == "" && bytes.Equal(current.Data[layout.KeyCACert], authority.CertPEM):
		return ctrl.Result{RequeueAfter: renewAt.Sub(now)}, nil
	case reason == "":
		// The authority's certificate changed, not its key or name (dbpilot
		// renewed it): the certificate verifies with either copy, so
		// clients keep it and take the copy beside it.
		updated := current.DeepCopy()
		updated.Data[layout.KeyCACert] = authority.CertPEM
		if err := r.Client.Update(ctx, updated, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing Secret %s: %w", key.Name, err)
		}
		return ctrl.Result{RequeueAfter: renewAt.Sub(now)}, nil
	case len(held.CertPEM) != 0 && !s.clientAuthorityTrusted:
		// Clients keep the certificate they have until every pod
		// verifies the new one; stageClientAuthority looks again.
		return ctrl.Result{}, nil
	}
	issued, err := pki.IssueClient(authority, s.applicationUser, now)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("issuing the application user's client certificate: %w", err)
	}
	wanted := desired.ApplicationCertificateSecret(db, issued, authority.CertPEM)
	if current.Name == "" {
		if err := r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		if len(db.Status.Conditions) == 0 {
			// The Database's first: nothing to tell.
			return ctrl.Result{RequeueAfter: pki.ClientValidity - pki.RenewBefore}, nil
		}
	} else {
		updated := current.DeepCopy()
		updated.Data = wanted.Data
		if err := r.Client.Update(ctx, updated, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing Secret %s: %w", key.Name, err)
		}
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonClientCertificateIssued, "IssueClientCertificate",
		"Issued the application user's client certificate in Secret %s again: %s", key.Name, reason)
	return ctrl.Result{RequeueAfter: pki.ClientValidity - pki.RenewBefore}, nil
}

// observeClientCertificate keeps the client certificate's expiry metric
// to the application user's certificate and the client authorities the
// pods trust, as the cache holds them (a Secret just written is seen by
// the pass its watch brings); a paused Database's too, since they expire
// all the same.
func (r *DatabaseReconciler) observeClientCertificate(ctx context.Context, db *dbpilotv1alpha1.Database) error {
	server, err := r.serverCertificate(ctx, db)
	if err != nil {
		return err
	}
	application := &corev1.Secret{}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ApplicationCertificateSecretName()}
	if err := r.Client.Get(ctx, key, application); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	setClientCertificateExpiry(client.ObjectKeyFromObject(db), application, server)
	return nil
}

// certificateUserProblem says why the application user (from the
// credentials Secret) cannot be asked for its certificate; empty when it
// can. Its name must be printable ASCII without a double quote: pg_hba.conf
// quotes it, and MariaDB matches the certificate's subject as OpenSSL
// prints it, escaping anything else.
func certificateUserProblem(db *dbpilotv1alpha1.Database, user string) string {
	for _, c := range user {
		if c < 0x20 || c > 0x7e || c == '"' {
			return fmt.Sprintf("spec.tls.clientCertificateRequired: the user name in Secret %s (key %s) must be printable ASCII without a double quote to be asked for a client certificate",
				db.CredentialsSecretName(), desired.SecretKeyUsername)
		}
	}
	return ""
}

// clientAuthority reads the authority of the Database's client
// certificates, creating it when its Secret does not exist. One that
// cannot sign is a problem naming the Secret (never overwritten).
func (r *DatabaseReconciler) clientAuthority(ctx context.Context, db *dbpilotv1alpha1.Database, now time.Time) (pki.KeyPair, string, error) {
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ClientAuthoritySecretName()}
	authority, problem, err := r.authority(ctx, db, key, clientCertificateAuthority(db), now,
		func(authority pki.KeyPair) *corev1.Secret { return desired.ClientAuthoritySecret(db, authority) })
	if problem != "" {
		problem = fmt.Sprintf("the client certificate authority in Secret %s (keys %s and %s) cannot sign the client certificate: %s; delete it for dbpilot to create a new authority",
			key.Name, layout.KeyCACert, layout.KeyCAKey, problem)
	}
	return authority, problem, err
}
