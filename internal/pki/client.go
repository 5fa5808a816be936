package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ClientValidity is how long a client certificate is valid; it is renewed
// RenewBefore its expiry, like a server certificate.
const ClientValidity = 365 * 24 * time.Hour

// IssueClient signs a certificate that authenticates user to the engines:
// its subject is the common name user alone (PostgreSQL's clientcert=verify-full
// matches it to the user name; MariaDB's REQUIRE SUBJECT to "/CN=user"),
// for client authentication only.
func IssueClient(authority KeyPair, user string, now time.Time) (KeyPair, error) {
	if user == "" {
		return KeyPair{}, errors.New("a client certificate needs a user name")
	}
	return issue(authority, user, now, ClientValidity, func(template *x509.Certificate) {
		template.Subject = pkix.Name{CommonName: user}
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
}

// ClientRenewal says why the client certificate must be issued again: it
// is missing or does not parse, its key is not its own, the authority did
// not sign it, it is not user's, it is not for client authentication
// alone, or it expires within RenewBefore of now.
// Empty when it is good; renewAt is then when it will need renewing.
func ClientRenewal(client, authority KeyPair, user string, now time.Time) (reason string, renewAt time.Time) {
	cert, reason := signedBy(client, authority)
	switch {
	case reason != "":
		return reason, time.Time{}
	case cert.Subject.String() != (pkix.Name{CommonName: user}).String():
		return fmt.Sprintf("it is not the application user's (subject %q)", cert.Subject.String()), time.Time{}
	case !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}):
		return "it is not for client authentication alone", time.Time{}
	}
	return renewalOf(cert, now)
}

// ClientIssuedAt is when IssueClient issued the client certificate
// (certPEM): its expiry less ClientValidity.
func ClientIssuedAt(certPEM []byte) (time.Time, error) {
	cert, err := parseLeaf(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter.Add(-ClientValidity), nil
}
