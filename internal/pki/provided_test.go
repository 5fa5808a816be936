package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

var required = []string{"orders-rw", "orders-rw.shop.svc", "*.orders-headless.shop.svc"}

// leafOptions shape the leaf cmChain issues.
type leafOptions struct {
	dnsNames  []string
	notBefore time.Time
	usages    []x509.ExtKeyUsage
}

// cmChain issues what cert-manager writes for a CA issuer with an
// intermediate: an RSA leaf whose key is PKCS #1, signed by an
// intermediate a root signed; it returns the leaf, the intermediate's
// certificate and the root's.
func cmChain(t *testing.T, opts leafOptions) (leaf KeyPair, intermediatePEM, rootPEM []byte) {
	t.Helper()
	authority := func(name string, serial int64) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour),
			NotAfter: now.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	}
	root, rootKey := signRSA(t, authority("root", 1), nil, nil)
	intermediate, intermediateKey := signRSA(t, authority("intermediate", 2), root, rootKey)
	if opts.notBefore.IsZero() {
		opts.notBefore = now.Add(-time.Hour)
	}
	// cert-manager's default usages: no extended key usage at all.
	cert, key := signRSA(t, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "leaf"}, NotBefore: opts.notBefore,
		NotAfter: now.Add(60 * 24 * time.Hour), DNSNames: opts.dnsNames, ExtKeyUsage: opts.usages,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}, intermediate, intermediateKey)
	encode := func(cert *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	}
	return KeyPair{
		CertPEM: encode(cert),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	}, encode(intermediate), encode(root)
}

// signRSA gives template a new RSA key and signs it with parentKey
// (itself when parent is nil).
func signRSA(t *testing.T, template, parent *x509.Certificate, parentKey *rsa.PrivateKey) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// withChain is the leaf with the intermediates after it, as tls.crt holds
// them.
func withChain(leaf KeyPair, intermediates ...[]byte) KeyPair {
	chain := append([]byte{}, leaf.CertPEM...)
	for _, pem := range intermediates {
		chain = append(chain, pem...)
	}
	return KeyPair{CertPEM: chain, KeyPEM: leaf.KeyPEM}
}

func TestProvidedServerAcceptsAChainWithAPKCS1Key(t *testing.T) {
	leaf, intermediate, root := cmChain(t, leafOptions{dnsNames: required})
	validity, problem := ProvidedServer(withChain(leaf, intermediate), root, required, now)
	if problem != "" {
		t.Fatalf("refused: %s", problem)
	}
	if want := now.Add(60 * 24 * time.Hour); !validity.NotAfter.Equal(want) {
		t.Errorf("notAfter %s, want the leaf's %s", validity.NotAfter, want)
	}
	// ca.crt holding the root and the intermediate is a bundle OpenSSL
	// builds the chain from too.
	if _, problem := ProvidedServer(leaf, append(append([]byte{}, root...), intermediate...), required, now); problem != "" {
		t.Errorf("a bundle of root and intermediate refused: %s", problem)
	}
	// Without its intermediate the leaf has no path to the authority.
	if _, problem := ProvidedServer(leaf, root, required, now); !strings.Contains(problem, "does not verify against the authority's") {
		t.Errorf("a leaf without its intermediate: %q", problem)
	}
	// An intermediate alone is no anchor to OpenSSL's clients.
	if _, problem := ProvidedServer(leaf, intermediate, required, now); !strings.Contains(problem, "ca.crt holds no root (self-signed) certificate") {
		t.Errorf("the intermediate as ca.crt: %q", problem)
	}
}

func TestProvidedServerTakesClockSkew(t *testing.T) {
	soon, intermediate, root := cmChain(t, leafOptions{dnsNames: required, notBefore: now.Add(ClockSkew - time.Minute)})
	if _, problem := ProvidedServer(withChain(soon, intermediate), root, required, now); problem != "" {
		t.Errorf("a certificate valid %s from now refused: %s", ClockSkew-time.Minute, problem)
	}
	later, intermediate, root := cmChain(t, leafOptions{dnsNames: required, notBefore: now.Add(ClockSkew + time.Minute)})
	validity, problem := ProvidedServer(withChain(later, intermediate), root, required, now)
	if !strings.Contains(problem, "the certificate is valid only from") || !validity.NotBefore.Equal(now.Add(ClockSkew+time.Minute)) {
		t.Errorf("a certificate valid %s from now: %q, valid from %s", ClockSkew+time.Minute, problem, validity.NotBefore)
	}
}

func TestProvidedServerNeedsEveryNameAndServerUse(t *testing.T) {
	pods, intermediate, root := cmChain(t, leafOptions{dnsNames: []string{"orders-rw", "orders-rw.shop.svc", "orders-0.orders-headless.shop.svc"}})
	if _, problem := ProvidedServer(withChain(pods, intermediate), root, required, now); problem != "the certificate does not carry the names *.orders-headless.shop.svc" {
		t.Errorf("a pod's name for the wildcard: %q", problem)
	}
	client, intermediate, root := cmChain(t, leafOptions{dnsNames: required, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if _, problem := ProvidedServer(withChain(client, intermediate), root, required, now); !strings.Contains(problem, "does not verify against the authority's") {
		t.Errorf("a certificate for clients only: %q", problem)
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
			"the certificate does not carry the names orders-rw.shop.svc, *.orders-headless.shop.svc"},
		{"another authority", good, authority(t).CertPEM, now, "does not verify against the authority's"},
		{"not an authority", good, []byte("not PEM"), now, "the authority's certificate (ca.crt) does not parse"},
		{"another key", KeyPair{CertPEM: good.CertPEM, KeyPEM: other.KeyPEM}, ca.CertPEM, now, "the certificate and its key do not pair: private key does not match public key"},
		{"no key", KeyPair{CertPEM: good.CertPEM}, ca.CertPEM, now, "the certificate and its key do not pair"},
		{"expired", good, ca.CertPEM, now.Add(ServerValidity + time.Minute), "the certificate expired at " + now.Add(ServerValidity).Format(time.RFC3339)},
		{"not yet valid", good, ca.CertPEM, now.Add(-backdate - ClockSkew - time.Minute), "the certificate is valid only from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problem := ProvidedServer(tc.pair, tc.authority, required, tc.at)
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
	if _, problem := ProvidedServer(good, ca.CertPEM, required, now); problem != "" {
		t.Errorf("a good certificate refused: %s", problem)
	}
}

func TestEarliestExpiryReadsEveryCertificate(t *testing.T) {
	ca := authority(t)
	pair := server(t, ca, names, now)
	// The authority comes first but expires last.
	earliest, err := EarliestExpiry(ca.CertPEM, pair.CertPEM)
	if err != nil || !earliest.Equal(now.Add(ServerValidity)) {
		t.Errorf("earliest %s (%v), want the server certificate's %s", earliest, err, now.Add(ServerValidity))
	}
	leaf, intermediate, root := cmChain(t, leafOptions{dnsNames: required})
	if earliest, err := EarliestExpiry(withChain(leaf, intermediate).CertPEM, root); err != nil || !earliest.Equal(now.Add(60*24*time.Hour)) {
		t.Errorf("earliest of a chain %s (%v), want the leaf's", earliest, err)
	}
	if _, err := EarliestExpiry(nil, []byte("no PEM")); err == nil {
		t.Error("no certificate at all, and no error")
	}
}
