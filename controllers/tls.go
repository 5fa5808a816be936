package controllers

import (
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

// reconcileTLS keeps the server certificate the Database's pods serve, in
// the Secret they mount: a copy of the user's when the spec names one
// (reconcileProvidedCertificate), else one of the Database's own authority
// (reconcileIssuedCertificate). dbpilot_server_certificate_expiry_timestamp_seconds
// follows that Secret, which the pods serve once the kubelet has updated
// their copies.
func (r *DatabaseReconciler) reconcileTLS(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	now := r.clock().Now()
	current, err := r.serverCertificate(ctx, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Every write of the Secret keeps the client authorities it holds,
	// or gives it the client authority when it holds none.
	s.clientAuthorities = current.Data[layout.KeyClientCACert]
	if len(s.clientAuthorities) == 0 {
		s.clientAuthorities = s.clientAuthority.CertPEM
	}
	var result ctrl.Result
	if provided := db.ProvidedServerCertificateSecretName(); provided != "" {
		result, err = r.reconcileProvidedCertificate(ctx, s, current, provided, now)
	} else {
		result, err = r.reconcileIssuedCertificate(ctx, s, current, now)
	}
	if err == nil {
		var staged ctrl.Result
		staged, err = r.stageClientAuthority(ctx, s, current)
		result = soonest(result, staged)
	}
	setServerCertificateExpiry(client.ObjectKeyFromObject(db), current)
	return result, err
}

// reconcileIssuedCertificate keeps the server certificate of the
// Database's own authority in current. The authority is created once, or
// read from a Secret of its name that exists already (one the user
// brought, or kept from a deleted Database of the same name); one that
// cannot sign is an error naming the Secret, never overwritten. The server
// certificate is issued when it is missing, when the names or the
// authority changed, and pki.RenewBefore its expiry; the pods take the new
// one without a restart, staged when the authority changes
// (stageServerCertificate). The Database is looked at again when it is due.
func (r *DatabaseReconciler) reconcileIssuedCertificate(ctx context.Context, s *scope, current *corev1.Secret, now time.Time) (ctrl.Result, error) {
	db := s.db
	authority, err := r.certificateAuthority(ctx, db, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	served := func() pki.KeyPair {
		return pki.KeyPair{CertPEM: current.Data[layout.KeyTLSCert], KeyPEM: current.Data[layout.KeyTLSKey]}
	}
	reason, _ := pki.ServerRenewal(served(), authority, db.ServerNames(), now)
	result, err := r.stageServerCertificate(ctx, s, current, certificateChange{
		authorities: authority.CertPEM, changes: reason != "",
		serve: func() (pki.KeyPair, error) {
			server, err := pki.IssueServer(authority, db.ServerNames(), now)
			if err != nil {
				return pki.KeyPair{}, fmt.Errorf("issuing the server certificate: %w", err)
			}
			return server, nil
		},
		reason: dbpilotv1alpha1.EventReasonCertificateIssued, action: "IssueCertificate",
		note: fmt.Sprintf("Issued the server certificate in Secret %s again: %s", db.ServerCertificateSecretName(), reason),
	})
	if err != nil {
		return result, err
	}
	// current is what the pods mount now: its renewal is due then, unless
	// a staged step comes first.
	if _, renewAt := pki.ServerRenewal(served(), authority, db.ServerNames(), now); !renewAt.IsZero() {
		result = soonest(result, ctrl.Result{RequeueAfter: renewAt.Sub(now)})
	}
	return result, nil
}

// observeServerCertificate keeps the expiry metric of a Database dbpilot
// changes nothing of (paused): its certificate expires all the same.
func (r *DatabaseReconciler) observeServerCertificate(ctx context.Context, db *dbpilotv1alpha1.Database) error {
	current, err := r.serverCertificate(ctx, db)
	if err != nil {
		return err
	}
	setServerCertificateExpiry(client.ObjectKeyFromObject(db), current)
	return nil
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

// writeServerCertificate creates the Secret the pods mount as wanted (a
// first certificate, which no pod has served yet), or writes wanted's data
// into current and records the Event format tells; current is then what
// was written, annotated with when (desired.AnnotationCertificateStaged).
func (r *DatabaseReconciler) writeServerCertificate(ctx context.Context, db *dbpilotv1alpha1.Database, current, wanted *corev1.Secret, reason, action, format string, args ...any) error {
	written := r.clock().Now().UTC().Format(time.RFC3339)
	if current.Name == "" {
		wanted.Annotations = map[string]string{desired.AnnotationCertificateStaged: written}
		if err := r.Client.Create(ctx, wanted, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("creating Secret %s: %w", wanted.Name, err)
		}
		*current = *wanted
		return nil
	}
	updated := current.DeepCopy()
	updated.Data = wanted.Data
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[desired.AnnotationCertificateStaged] = written
	if err := r.Client.Update(ctx, updated, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("writing Secret %s: %w", current.Name, err)
	}
	*current = *updated
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, reason, action, format, args...)
	return nil
}

// certificateAuthority reads the Database's authority, creating it when its
// Secret does not exist.
func (r *DatabaseReconciler) certificateAuthority(ctx context.Context, db *dbpilotv1alpha1.Database, now time.Time) (pki.KeyPair, error) {
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.CertificateAuthoritySecretName()}
	authority, problem, err := r.authority(ctx, db, key, serverAuthority(db), now,
		func(authority pki.KeyPair) *corev1.Secret { return desired.CertificateAuthoritySecret(db, authority) })
	if err == nil && problem != "" {
		err = fmt.Errorf("the certificate authority in Secret %s (keys %s and %s) cannot sign the server certificate: %s; delete it for dbpilot to create a new authority",
			key.Name, layout.KeyCACert, layout.KeyCAKey, problem)
	}
	return authority, err
}

// authority reads the authority in the Secret of key, creating own in the
// Secret secretFor makes when it does not exist, and
// renewing it a year before it expires (renewOwnAuthority; one of the
// user's is read and never written); problem says why it cannot sign
// (never overwritten).
func (r *DatabaseReconciler) authority(ctx context.Context, db *dbpilotv1alpha1.Database, key client.ObjectKey, own ownAuthority, now time.Time, secretFor func(pki.KeyPair) *corev1.Secret) (authority pki.KeyPair, problem string, err error) {
	secret, _, err := r.createOrReadSecret(ctx, key, func() (*corev1.Secret, error) {
		authority, err := pki.NewAuthority(own.commonName, now)
		if err != nil {
			return nil, err
		}
		return secretFor(authority), nil
	})
	if err != nil {
		return pki.KeyPair{}, "", err
	}
	authority = pki.KeyPair{CertPEM: secret.Data[layout.KeyCACert], KeyPEM: secret.Data[layout.KeyCAKey]}
	authority = r.renewOwnAuthority(ctx, db, secret, authority, own, now)
	if problem := pki.AuthorityProblem(authority, now); problem != "" {
		return pki.KeyPair{}, problem, nil
	}
	return authority, "", nil
}
