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

// ownAuthority is one of dbpilot's own authorities: the common name it
// gives it, and what its renewal's Event calls it and says of the former
// copy, with its reason and action (each authority has its own: the
// recorder folds Events of the same reason and action into one series,
// which keeps the first note).
type ownAuthority struct {
	commonName, what, former, eventReason, action string
}

// serverAuthority is the Database's authority of its server certificate.
func serverAuthority(db *dbpilotv1alpha1.Database) ownAuthority {
	return ownAuthority{commonName: db.Name + "." + db.Namespace + " certificate authority", what: "certificate authority",
		former:      "clients that keep it verify the servers with it until then",
		eventReason: dbpilotv1alpha1.EventReasonCertificateAuthorityRenewed, action: "RenewAuthority"}
}

// clientCertificateAuthority is the Database's authority of its client
// certificates.
func clientCertificateAuthority(db *dbpilotv1alpha1.Database) ownAuthority {
	return ownAuthority{commonName: db.Name + "." + db.Namespace + " client certificate authority", what: "client certificate authority",
		former:      "the client certificates it signed verify with the renewed copy and are kept",
		eventReason: dbpilotv1alpha1.EventReasonClientCertificateAuthorityRenewed, action: "RenewClientAuthority"}
}

// renewOwnAuthority issues an authority of dbpilot's own (own),
// again with its key in its Secret, a year before it expires
// (pki.AuthorityRenewal): the server's certificates and the client
// certificates it signed verify with either copy, so clients that keep the
// former go on verifying until it expires, and none is issued again; the
// pods' Secret trusts the renewed copy in place of the former at once
// (stageServerCertificate, stageClientAuthority). An authority of
// another name is the user's: read, never written. A renewal that fails
// holds back nothing else: a Warning Event says why, and the authority
// serves as it is until it is renewed. The Database is looked at again
// within the manager's resync period (hours), well inside the year.
func (r *DatabaseReconciler) renewOwnAuthority(ctx context.Context, db *dbpilotv1alpha1.Database, secret *corev1.Secret, authority pki.KeyPair, own ownAuthority, now time.Time) pki.KeyPair {
	renewed, err := r.renewAuthoritySecret(ctx, db, secret, authority, own, now)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Renewing an authority of dbpilot's own", "secret", secret.Name)
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonCertificateAuthorityRenewalFailed, own.action,
			"Could not renew the %s in Secret %s: %v", own.what, secret.Name, err)
		return authority
	}
	return renewed
}

// renewAuthoritySecret is renewOwnAuthority's renewal: the authority it
// serves with from now, or the error that kept it from renewing.
func (r *DatabaseReconciler) renewAuthoritySecret(ctx context.Context, db *dbpilotv1alpha1.Database, secret *corev1.Secret, authority pki.KeyPair, own ownAuthority, now time.Time) (pki.KeyPair, error) {
	if reason, _ := pki.AuthorityRenewal(authority, own.commonName, now); reason == "" {
		return authority, nil
	}
	// The cache may not hold the renewal of a pass just before: the API
	// server tells whether it is still due.
	fresh := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(secret), fresh); err != nil {
		return pki.KeyPair{}, fmt.Errorf("reading Secret %s: %w", secret.Name, err)
	}
	authority = pki.KeyPair{CertPEM: fresh.Data[layout.KeyCACert], KeyPEM: fresh.Data[layout.KeyCAKey]}
	reason, _ := pki.AuthorityRenewal(authority, own.commonName, now)
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
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, own.eventReason, own.action,
		"Renewed the %s in Secret %s with its key for %d years (the former certificate %s; %s)",
		own.what, secret.Name, int(pki.AuthorityValidity/(365*24*time.Hour)), reason, own.former)
	return renewed, nil
}
