package realnode_test

import (
	"context"
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
// it for a CA issuer of the user's (not dbpilot's): an RSA certificate for
// every name of db, its key in PKCS #1 (cert-manager's default encoding),
// and the issuer's certificate in ca.crt.
func createProvidedCertificate(g Gomega, db *dbpilotv1alpha1.Database, name string) {
	now := time.Now()
	issuerKey, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	issuer := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "the platform team's issuer"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	issuerDER, err := x509.CreateCertificate(rand.Reader, issuer, issuer, issuerKey.Public(), issuerKey)
	g.Expect(err).NotTo(HaveOccurred())
	issuer, err = x509.ParseCertificate(issuerDER)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: db.ServerNames()[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: db.ServerNames(),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, issuer, key.Public(), issuerKey)
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			layout.KeyTLSCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
			layout.KeyTLSKey:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
			layout.KeyCACert:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuerDER}),
		}}
	_, err = clientset.CoreV1().Secrets(db.Namespace).Create(context.Background(), secret, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}
