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
// the authorities' certificates the instances verify each other with
// (while the authority changes, the former one's too), and the client
// authority's certificate the engines verify client certificates with
// (none when clientAuthorityCert is nil).
func ServerCertificateSecret(db *dbpilotv1alpha1.Database, server pki.KeyPair, authorityCert, clientAuthorityCert []byte) *corev1.Secret {
	data := map[string][]byte{
		layout.KeyTLSCert: server.CertPEM,
		layout.KeyTLSKey:  server.KeyPEM,
		layout.KeyCACert:  authorityCert,
	}
	if clientAuthorityCert != nil {
		data[layout.KeyClientCACert] = clientAuthorityCert
	}
	secret := generatedSecret(db, db.ServerCertificateSecretName(), data)
	secret.Type = corev1.SecretTypeTLS
	return secret
}

// ClientAuthoritySecret holds the authority of the Database's client
// certificates. Created once and kept like the server authority: clients
// hold certificates it signed.
func ClientAuthoritySecret(db *dbpilotv1alpha1.Database, authority pki.KeyPair) *corev1.Secret {
	return generatedSecret(db, db.ClientAuthoritySecretName(), map[string][]byte{
		layout.KeyCACert: authority.CertPEM,
		layout.KeyCAKey:  authority.KeyPEM,
	})
}

// ApplicationCertificateSecret holds the application user's client
// certificate, its key, and the certificate of the authority that signed
// it (ca.crt, as cert-manager writes a Secret of type kubernetes.io/tls).
func ApplicationCertificateSecret(db *dbpilotv1alpha1.Database, client pki.KeyPair, authorityCert []byte) *corev1.Secret {
	secret := generatedSecret(db, db.ApplicationCertificateSecretName(), map[string][]byte{
		layout.KeyTLSCert: client.CertPEM,
		layout.KeyTLSKey:  client.KeyPEM,
		layout.KeyCACert:  authorityCert,
	})
	secret.Type = corev1.SecretTypeTLS
	return secret
}
