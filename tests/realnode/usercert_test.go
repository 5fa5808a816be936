package realnode_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// createProvidedCertificate creates the Secret name as cert-manager writes
// it for an issuer of the user's (not dbpilot's) whose CA is an
// intermediate: an RSA certificate for every name of db, its key in
// PKCS #1 (cert-manager's default encoding), the intermediate after it in
// tls.crt, and the root in ca.crt.
func createProvidedCertificate(g Gomega, db *dbpilotv1alpha1.Database, name string) {
	rootKey, rootDER := signedCertificate(g, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "the platform team's root"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}, nil, nil)
	root, err := x509.ParseCertificate(rootDER)
	g.Expect(err).NotTo(HaveOccurred())
	issuerKey, issuerDER := signedCertificate(g, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "the platform team's issuer"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}, root, rootKey)
	issuer, err := x509.ParseCertificate(issuerDER)
	g.Expect(err).NotTo(HaveOccurred())
	key, leafDER := signedCertificate(g, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: db.ServerNames()[0]},
		DNSNames: db.ServerNames(), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}, issuer, issuerKey)
	certificate := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			layout.KeyTLSCert: append(certificate(leafDER), certificate(issuerDER)...),
			layout.KeyTLSKey:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
			layout.KeyCACert:  certificate(rootDER),
		}}
	_, err = clientset.CoreV1().Secrets(db.Namespace).Create(context.Background(), secret, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// signedCertificate gives template a new RSA key and a day of validity and
// signs it with parent's key (itself when parent is nil).
func signedCertificate(g Gomega, template, parent *x509.Certificate, parentKey crypto.Signer) (*rsa.PrivateKey, []byte) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	template.NotBefore, template.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	g.Expect(err).NotTo(HaveOccurred())
	return key, der
}
