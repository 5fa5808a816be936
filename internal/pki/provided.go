package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ProvidedServer checks a server certificate the user brought (its chain
// in server.CertPEM, the leaf first) before the pods serve it: it must pair
// with its key (PKCS #1, PKCS #8 or SEC 1), be valid now, and verify
// against authorityPEM for every host in hosts. It returns the leaf's
// expiry, or what is wrong in words that show no key material.
func ProvidedServer(server KeyPair, authorityPEM []byte, hosts []string, now time.Time) (notAfter time.Time, problem string) {
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		return time.Time{}, "the certificate and its key do not pair: " + strings.TrimPrefix(err.Error(), "tls: ")
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return time.Time{}, "the certificate does not parse: " + err.Error()
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(authorityPEM) {
		return time.Time{}, "the authority's certificate does not parse"
	}
	switch {
	case now.Before(leaf.NotBefore):
		return time.Time{}, "the certificate is valid only from " + leaf.NotBefore.UTC().Format(time.RFC3339)
	case !now.Before(leaf.NotAfter):
		return time.Time{}, "the certificate expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return time.Time{}, "an intermediate certificate does not parse: " + err.Error()
		}
		intermediates.AddCert(cert)
	}
	var missing []string
	for _, host := range hosts {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, DNSName: host, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		var wrongHost x509.HostnameError
		switch {
		case errors.As(err, &wrongHost):
			missing = append(missing, host)
		case err != nil:
			return time.Time{}, fmt.Sprintf("the certificate does not verify against the authority's: %v", err)
		}
	}
	if len(missing) > 0 {
		return time.Time{}, "the certificate does not carry the names " + strings.Join(missing, ", ")
	}
	return leaf.NotAfter, ""
}
