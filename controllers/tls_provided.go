package controllers

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// reconcileProvidedCertificate copies the user's server certificate, from
// the Secret named provided, into the one the pods mount, when it is
// usable (pki.ProvidedServer, for every name the Database is reached by)
// and differs, staged when the authorities change (stageServerCertificate).
// An unusable one is not copied, so the pods keep serving the
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
	if problem := missingKeysProblem(secret, []string{layout.KeyTLSCert, layout.KeyTLSKey, layout.KeyCACert}); problem != "" {
		s.tlsProblem = "spec.tls.serverCertificateSecretName: " + problem
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
	result, err := r.stageServerCertificate(ctx, s, current, certificateChange{
		authorities: secret.Data[layout.KeyCACert],
		changes:     !bytes.Equal(current.Data[layout.KeyTLSCert], pair.CertPEM) || !bytes.Equal(current.Data[layout.KeyTLSKey], pair.KeyPEM),
		serve:       func() (pki.KeyPair, error) { return pair, nil },
		reason:      dbpilotv1alpha1.EventReasonCertificateCopied, action: "CopyCertificate",
		note: fmt.Sprintf("Copied the server certificate of Secret %s into Secret %s", provided, db.ServerCertificateSecretName()),
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	return soonest(result, ctrl.Result{RequeueAfter: validity.NotAfter.Sub(now)}), nil
}
