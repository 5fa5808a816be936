package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// VerifyingConfig is a TLS client configuration that verifies a server's
// certificate for serverName against the authority's certificate
// (authorityPEM).
func VerifyingConfig(authorityPEM []byte, serverName string) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(authorityPEM) {
		return nil, errors.New("the authority's certificate does not parse")
	}
	return &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}
