package desired

import (
	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// AnnotationCertificateStaged on the server certificate Secret is when
// dbpilot last wrote it (RFC 3339): a staged change of certificate waits
// from then for every pod to mount it, at most a few minutes.
const AnnotationCertificateStaged = "dbpilot.io/certificate-staged"

// CertificateAuthoritySecret holds the Database's certificate authority.
// Like the generated credentials it is created once and kept (clients trust
// its ca.crt), with the volumes when deletionPolicy is Retain.
func CertificateAuthoritySecret(db *dbpilotv1alpha1.Database, authority pki.KeyPair) *corev1.Secret {
	return generatedSecret(db, db.CertificateAuthoritySecretName(), map[string][]byte{
		layout.KeyCACert: authority.CertPEM,
		layout.KeyCAKey:  authority.KeyPEM,
	})
}

// ServerCertificateSecret holds the certificate every pod serves, its key,
// and the authorities' certificates the instances verify each other with
// (while the authority changes, the former one's too).
func ServerCertificateSecret(db *dbpilotv1alpha1.Database, server pki.KeyPair, authorityCert []byte) *corev1.Secret {
	secret := generatedSecret(db, db.ServerCertificateSecretName(), map[string][]byte{
		layout.KeyTLSCert: server.CertPEM,
		layout.KeyTLSKey:  server.KeyPEM,
		layout.KeyCACert:  authorityCert,
	})
	secret.Type = corev1.SecretTypeTLS
	return secret
}
