package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

var hosts = []string{"orders-rw", "orders-rw.shop.svc", "orders-0.orders-headless.shop.svc"}

// cmChain issues what cert-manager writes for a CA issuer with an
// intermediate: an RSA leaf for dnsNames whose key is PKCS #1, signed by an
// intermediate a root signed; it returns the leaf, the intermediate's
// certificate and the root's.
func cmChain(t *testing.T, dnsNames []string) (leaf KeyPair, intermediatePEM, rootPEM []byte) {
	t.Helper()
	rootKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rootTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTemplate, rootTemplate, rootKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	rootCert, err := x509.ParseCertificate(rootDER)
	if err != nil {
		t.Fatal(err)
	}
	interKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	interTemplate := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(90 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	interDER, err := x509.CreateCertificate(rand.Reader, interTemplate, rootCert, interKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	interCert, err := x509.ParseCertificate(interDER)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	// cert-manager's default usages: no extended key usage at all.
	leafTemplate := &x509.Certificate{SerialNumber: big.NewInt(3), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(60 * 24 * time.Hour),
		DNSNames: dnsNames, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, interCert, leafKey.Public(), interKey)
	if err != nil {
		t.Fatal(err)
	}
	intermediatePEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: interDER})
	rootPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(leafKey)}),
	}, intermediatePEM, rootPEM
}

func TestProvidedServerAcceptsAChainWithAPKCS1Key(t *testing.T) {
	leaf, intermediate, root := cmChain(t, []string{"orders-rw", "orders-rw.shop.svc", "*.orders-headless.shop.svc"})
	chain := KeyPair{CertPEM: append(append([]byte{}, leaf.CertPEM...), intermediate...), KeyPEM: leaf.KeyPEM}
	notAfter, problem := ProvidedServer(chain, root, hosts, now)
	if problem != "" {
		t.Fatalf("refused: %s", problem)
	}
	if want := now.Add(60 * 24 * time.Hour); !notAfter.Equal(want) {
		t.Errorf("notAfter %s, want the leaf's %s", notAfter, want)
	}
	// Without its intermediate the leaf has no path to the authority.
	if _, problem := ProvidedServer(leaf, root, hosts, now); !strings.Contains(problem, "does not verify against the authority's") {
		t.Errorf("a leaf without its intermediate: %q", problem)
	}
}

func TestProvidedServerNamesWhatIsWrong(t *testing.T) {
	ca := authority(t)
	good := server(t, ca, names, now)
	other := server(t, ca, names, now)
	for _, tc := range []struct {
		name      string
		pair      KeyPair
		authority []byte
		at        time.Time
		want      string
	}{
		{"names missing", server(t, ca, []string{"orders-rw"}, now), ca.CertPEM, now,
			"the certificate does not carry the names orders-rw.shop.svc, orders-0.orders-headless.shop.svc"},
		{"another authority", good, authority(t).CertPEM, now, "does not verify against the authority's"},
		{"not an authority", good, []byte("not PEM"), now, "the authority's certificate does not parse"},
		{"another key", KeyPair{CertPEM: good.CertPEM, KeyPEM: other.KeyPEM}, ca.CertPEM, now, "the certificate and its key do not pair: private key does not match public key"},
		{"no key", KeyPair{CertPEM: good.CertPEM}, ca.CertPEM, now, "the certificate and its key do not pair"},
		{"expired", good, ca.CertPEM, now.Add(ServerValidity + time.Minute), "the certificate expired at " + now.Add(ServerValidity).Format(time.RFC3339)},
		{"not yet valid", good, ca.CertPEM, now.Add(-time.Hour), "the certificate is valid only from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problem := ProvidedServer(tc.pair, tc.authority, hosts, tc.at)
			if !strings.Contains(problem, tc.want) {
				t.Errorf("problem %q, want %q in it", problem, tc.want)
			}
			for _, secret := range []string{"PRIVATE KEY", string(tc.pair.KeyPEM[min(len(tc.pair.KeyPEM), 40):min(len(tc.pair.KeyPEM), 80)])} {
				if secret != "" && strings.Contains(problem, secret) {
					t.Errorf("the problem shows key material: %q", problem)
				}
			}
		})
	}
	if _, problem := ProvidedServer(good, ca.CertPEM, hosts, now); problem != "" {
		t.Errorf("a good certificate refused: %s", problem)
	}
}
