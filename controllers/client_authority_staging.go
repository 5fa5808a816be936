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
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// defaultClientAuthorityOverlap is how long a replaced client authority
// stays trusted after the application user's certificate is issued from
// the new one: the kubelet updates a client's mounted Secret within about
// a minute, and a client that reads it as it connects takes it then.
const defaultClientAuthorityOverlap = 5 * time.Minute

func (r *DatabaseReconciler) clientAuthorityOverlap() time.Duration {
	if r.ClientAuthorityOverlap <= 0 {
		return defaultClientAuthorityOverlap
	}
	return r.ClientAuthorityOverlap
}

// stageClientAuthority takes the client authorities the pods' Secret
// (current) holds one step towards the client authority alone, so that
// neither the application user's former certificate nor the new one is
// ever refused (certificateStepFor, the certificate changing while it is
// not the authority's): the authority is trusted beside the former ones,
// the certificate is issued from it once every pod's engine verifies with
// them all (reconcileClientCertificate, told by s.clientAuthorityTrusted),
// and the former ones are retired the overlap after it was issued (as
// pki.ClientIssuedAt reads it from the certificate). A Secret that trusts
// no client authority yet (one from before client certificates) takes it
// at once: no engine verifies a client certificate with anything, so none
// is refused that was not before. A renewed copy of the authority takes
// the former copies' place at once (stepReplace).
func (r *DatabaseReconciler) stageClientAuthority(ctx context.Context, s *scope, current *corev1.Secret) (ctrl.Result, error) {
	authority := s.clientAuthority.CertPEM
	if authority == nil {
		// It cannot be read: the pods keep trusting what they have.
		return ctrl.Result{}, nil
	}
	if current.Name == "" || len(current.Data[layout.KeyTLSCert]) == 0 {
		// No certificate is served, so no engine verifies clients; its
		// first write carries the authority.
		s.clientAuthorityTrusted = true
		return ctrl.Result{}, nil
	}
	trusted := current.Data[layout.KeyClientCACert]
	name := current.Name
	if len(trusted) == 0 {
		s.clientAuthorityTrusted = true
		return ctrl.Result{}, r.writeClientAuthorities(ctx, s, current, authority, dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted, "TrustClientAuthority",
			"Secret %s trusts the client certificate authority of Secret %s: the engines verify client certificates with it", name, s.db.ClientAuthoritySecretName())
	}
	application, err := r.applicationCertificate(ctx, s.db)
	if err != nil {
		return ctrl.Result{}, err
	}
	// dbpilot writes the authority that signed it beside it; nothing a
	// copy of the authority the pods trust signed changes for a renewed
	// copy (reconcileClientCertificate keeps it).
	fromIt := application != nil && bytes.Equal(application.Data[layout.KeyCACert], authority)
	switch certificateStepFor(trusted, authority, !fromIt && !pki.OneAuthority(trusted, authority)) {
	case stepReplace:
		s.clientAuthorityTrusted = true
		// An action of its own: the recorder would fold it into an
		// earlier series of the same reason and action, with that note.
		return ctrl.Result{}, r.writeClientAuthorities(ctx, s, current, authority, dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted, "TrustRenewedClientAuthority",
			"Secret %s trusts the renewed client certificate authority of Secret %s in place of its former copy: the client certificates either signed verify with it", name, s.db.ClientAuthoritySecretName())
	case stepNone:
		s.clientAuthorityTrusted = true
	case stepTrust:
		err := r.writeClientAuthorities(ctx, s, current, pki.JoinBundles(trusted, authority), dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted, "TrustClientAuthority",
			"Secret %s trusts the client certificate authority of Secret %s beside the former one; the application user's certificate follows once every pod verifies with both", name, s.db.ClientAuthoritySecretName())
		return ctrl.Result{RequeueAfter: stagePoll}, err
	case stepServe:
		if application == nil || s.applicationUser == "" {
			// No certificate of dbpilot's to issue again (missing: issued
			// at once; the user's Secret, or no user: none is issued):
			// nothing to wait for, and the former authorities stay until
			// one is.
			s.clientAuthorityTrusted = true
			return ctrl.Result{}, nil
		}
		wait, _, err := r.waitForMounts(ctx, s, current, "the client authorities", trusted, func(c layout.CertificateStatus) string { return c.ClientAuthorities })
		if wait || err != nil {
			return ctrl.Result{RequeueAfter: stagePoll}, err
		}
		// Issued in this pass: the former ones are retired the overlap
		// after.
		s.clientAuthorityTrusted = true
		return ctrl.Result{RequeueAfter: r.clientAuthorityOverlap()}, nil
	case stepRetire:
		s.clientAuthorityTrusted = true
		issued, err := pki.ClientIssuedAt(application.Data[layout.KeyTLSCert])
		if err != nil {
			// reconcileClientCertificate issues it again in this pass.
			return ctrl.Result{RequeueAfter: r.clientAuthorityOverlap()}, nil
		}
		now := r.clock().Now()
		if due := issued.Add(r.clientAuthorityOverlap()); now.Before(due) {
			return ctrl.Result{RequeueAfter: due.Sub(now)}, nil
		}
		return ctrl.Result{}, r.writeClientAuthorities(ctx, s, current, authority, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRetired, "RetireClientAuthority",
			"Secret %s trusts only the client certificate authority of Secret %s now: the application user's certificate in Secret %s was issued from it %s ago",
			name, s.db.ClientAuthoritySecretName(), application.Name, now.Sub(issued).Round(time.Second))
	}
	return ctrl.Result{}, nil
}

// writeClientAuthorities writes authorities as the client authorities of
// the pods' Secret (current), which keeps all else, and records the Event
// format tells.
func (r *DatabaseReconciler) writeClientAuthorities(ctx context.Context, s *scope, current *corev1.Secret, authorities []byte, reason, action, format string, args ...any) error {
	wanted := current.DeepCopy()
	wanted.Data[layout.KeyClientCACert] = authorities
	if err := r.writeServerCertificate(ctx, s.db, current, wanted, reason, action, format, args...); err != nil {
		return err
	}
	s.clientAuthorities = authorities
	return nil
}

// applicationCertificate reads the application user's client certificate
// Secret from the cache: nil when it holds none of that name (missing, or
// the user's, which reconcileClientCertificate tells about).
func (r *DatabaseReconciler) applicationCertificate(ctx context.Context, db *dbpilotv1alpha1.Database) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ApplicationCertificateSecretName()}
	if err := r.Client.Get(ctx, key, secret); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	return secret, nil
}
