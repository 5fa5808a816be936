package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// renewOwnAuthority issues an authority of dbpilot's own, named commonName,
// again with its key in its Secret, a year before it expires
// (pki.AuthorityRenewal): the server's certificates and the client
// certificates it signed verify with either copy, so clients that keep the
// former go on verifying until it expires, and the pods' Secret takes the
// renewed one in the staged steps of any new authority. An authority of
// another name is the user's: read, never written. A renewal that fails
// holds back nothing else: a Warning Event says why, and the authority
// serves as it is until it is renewed. The Database is looked at again
// within the manager's resync period (hours), well inside the year.
func (r *DatabaseReconciler) renewOwnAuthority(ctx context.Context, db *dbpilotv1alpha1.Database, secret *corev1.Secret, authority pki.KeyPair, commonName string, now time.Time) pki.KeyPair {
	renewed, err := r.renewAuthoritySecret(ctx, db, secret, authority, commonName, now)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Renewing an authority of dbpilot's own", "secret", secret.Name)
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonCertificateAuthorityRenewalFailed, "RenewAuthority",
			"Could not renew the authority in Secret %s: %v", secret.Name, err)
		return authority
	}
	return renewed
}

// renewAuthoritySecret is renewOwnAuthority's renewal: the authority it
// serves with from now, or the error that kept it from renewing.
func (r *DatabaseReconciler) renewAuthoritySecret(ctx context.Context, db *dbpilotv1alpha1.Database, secret *corev1.Secret, authority pki.KeyPair, commonName string, now time.Time) (pki.KeyPair, error) {
	if reason, _ := pki.AuthorityRenewal(authority, commonName, now); reason == "" {
		return authority, nil
	}
	// The cache may not hold the renewal of a pass just before: the API
	// server tells whether it is still due.
	fresh := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(secret), fresh); err != nil {
		return pki.KeyPair{}, fmt.Errorf("reading Secret %s: %w", secret.Name, err)
	}
	authority = pki.KeyPair{CertPEM: fresh.Data[layout.KeyCACert], KeyPEM: fresh.Data[layout.KeyCAKey]}
	reason, _ := pki.AuthorityRenewal(authority, commonName, now)
	if reason == "" {
		return authority, nil
	}
	renewed, err := pki.RenewAuthority(authority, now)
	if err != nil {
		return pki.KeyPair{}, fmt.Errorf("renewing the certificate authority in Secret %s: %w", secret.Name, err)
	}
	updated := fresh.DeepCopy()
	updated.Data[layout.KeyCACert] = renewed.CertPEM
	if err := r.Client.Update(ctx, updated, client.FieldOwner(FieldOwner)); err != nil {
		return pki.KeyPair{}, fmt.Errorf("writing Secret %s: %w", secret.Name, err)
	}
	// Each authority has its Event: the recorder folds those of the same
	// reason and action into one series, which keeps the first note.
	eventReason, action, what := dbpilotv1alpha1.EventReasonCertificateAuthorityRenewed, "RenewAuthority", "certificate authority"
	if secret.Name == db.ClientAuthoritySecretName() {
		eventReason, action, what = dbpilotv1alpha1.EventReasonClientCertificateAuthorityRenewed, "RenewClientAuthority", "client certificate authority"
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, eventReason, action,
		"Renewed the %s in Secret %s with its key for %d years (the former certificate %s; clients that keep it verify with it until then)",
		what, secret.Name, int(pki.AuthorityValidity/(365*24*time.Hour)), reason)
	return renewed, nil
}
