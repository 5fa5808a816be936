package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ClockSkew is how far a certificate's validity may start after now and
// still count as valid: an issuer whose clock runs a little ahead (or an
// operator's that runs behind) must not have a fresh certificate refused.
const ClockSkew = 5 * time.Minute

// Validity is when a certificate is valid.
type Validity struct {
	NotBefore, NotAfter time.Time
}

// ProvidedServer checks a server certificate the user brought (its chain
// in server.CertPEM, the leaf first) before the pods serve it: it must pair
// with its key (PKCS #1, PKCS #8 or SEC 1), be valid now (give or take
// ClockSkew), chain up through its intermediates to a self-signed root in
// authorityPEM (OpenSSL's clients, libpq's and MariaDB's, trust nothing
// less), and carry every name in names: a DNS name it verifies for, a
// wildcard ("*.") as it is. It returns the leaf's validity (zero when it
// does not parse or does not pair with the key), and what is wrong in
// words that show no key material.
func ProvidedServer(server KeyPair, authorityPEM []byte, names []string, now time.Time) (Validity, string) {
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		return Validity{}, "the certificate and its key do not pair: " + strings.TrimPrefix(err.Error(), "tls: ")
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return Validity{}, "the certificate does not parse: " + err.Error()
		}
	}
	validity := Validity{NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter}
	switch {
	case now.Add(ClockSkew).Before(leaf.NotBefore):
		return validity, "the certificate is valid only from " + leaf.NotBefore.UTC().Format(time.RFC3339)
	case !now.Before(leaf.NotAfter):
		return validity, "the certificate expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	authorities, err := certificates(authorityPEM)
	if err != nil || len(authorities) == 0 {
		return validity, "the authority's certificate (ca.crt) does not parse"
	}
	// OpenSSL's clients (libpq's, MariaDB's) anchor a chain only on a
	// self-signed certificate; what else ca.crt holds builds the chain.
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	hasRoot := false
	for _, cert := range authorities {
		if selfSigned(cert) {
			roots.AddCert(cert)
			hasRoot = true
		} else {
			intermediates.AddCert(cert)
		}
	}
	if !hasRoot {
		return validity, "ca.crt holds no root (self-signed) certificate, which OpenSSL's clients need: put the intermediates after the certificate in tls.crt and the root in ca.crt"
	}
	for _, der := range pair.Certificate[1:] {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return validity, "an intermediate certificate does not parse: " + err.Error()
		}
		intermediates.AddCert(cert)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: latest(now, leaf.NotBefore),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return validity, fmt.Sprintf("the certificate does not verify against the authority's (ca.crt): %v", err)
	}
	var missing []string
	for _, name := range names {
		if strings.HasPrefix(name, "*.") {
			if !slices.Contains(leaf.DNSNames, name) {
				missing = append(missing, name)
			}
			continue
		}
		if leaf.VerifyHostname(name) != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return validity, "the certificate does not carry the names " + strings.Join(missing, ", ")
	}
	return validity, ""
}

// certificates parses every certificate of a PEM bundle.
func certificates(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		if block, bundle = pem.Decode(bundle); block == nil {
			return certs, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
}

// selfSigned reports whether cert is a root: its own issuer, signed by
// its own key.
func selfSigned(cert *x509.Certificate) bool {
	return string(cert.RawSubject) == string(cert.RawIssuer) && cert.CheckSignatureFrom(cert) == nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
