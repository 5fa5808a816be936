package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"time"
)

// AuthorityRenewBefore is how long before its expiry dbpilot renews an
// authority of its own: a year, for clients that keep a copy of its
// certificate to take the renewed one before the former expires.
const AuthorityRenewBefore = 365 * 24 * time.Hour

// AuthorityRenewal says why dbpilot renews the authority it names
// commonName: the authority is dbpilot's (a self-signed certificate with
// the subject NewAuthority gives it, its key its own) and it expires
// within AuthorityRenewBefore of now, or has (reason: when). Empty
// otherwise, with
// renewAt when it will be due; zero for an authority that is not
// dbpilot's, which is never renewed (the user's is never written).
func AuthorityRenewal(authority KeyPair, commonName string, now time.Time) (reason string, renewAt time.Time) {
	cert, _, err := authority.parse()
	if err != nil || !cert.IsCA || cert.Subject.CommonName != commonName || !slices.Equal(cert.Subject.Organization, []string{organization}) ||
		!selfSigned(cert) {
		return "", time.Time{}
	}
	renewAt = cert.NotAfter.Add(-AuthorityRenewBefore)
	if now.Before(renewAt) {
		return "", renewAt
	}
	return "expires at " + cert.NotAfter.UTC().Format(time.RFC3339), time.Time{}
}

// RenewAuthority issues the authority's certificate again, with its key
// and subject, valid from now for AuthorityValidity. What the former
// certificate verified the renewed one verifies too (the same key signed
// it), and what the authority signs from now on the former verifies until
// it expires: clients that keep a copy of either go on verifying.
func RenewAuthority(authority KeyPair, now time.Time) (KeyPair, error) {
	cert, key, err := authority.parse()
	if err != nil {
		return KeyPair{}, err
	}
	if !cert.IsCA {
		return KeyPair{}, errors.New("the certificate is not a certificate authority")
	}
	template, err := authorityTemplate(cert.Subject.CommonName, now)
	if err != nil {
		return KeyPair{}, err
	}
	// The subject byte for byte: verifiers match a certificate's issuer
	// to its authority's subject so.
	template.RawSubject = cert.RawSubject
	template.SubjectKeyId = cert.SubjectKeyId
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: authority.KeyPEM}, nil
}

// OneAuthority reports whether the certificates of the PEM bundles a and
// b, one in each at least, are all copies of one authority's (its subject,
// public key and key identifier), as RenewAuthority issues them: a TLS
// peer finds the issuer of a certificate by name and key identifier, so
// what one copy verifies, every copy does, each while it is valid.
func OneAuthority(a, b []byte) bool {
	ders, more := bundleCertificates(a), bundleCertificates(b)
	if len(ders) == 0 || len(more) == 0 {
		return false
	}
	var first *x509.Certificate
	for _, der := range append(ders, more...) {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return false
		}
		if first == nil {
			first = cert
		}
		if !bytes.Equal(cert.RawSubject, first.RawSubject) || !bytes.Equal(cert.RawSubjectPublicKeyInfo, first.RawSubjectPublicKeyInfo) ||
			!bytes.Equal(cert.SubjectKeyId, first.SubjectKeyId) {
			return false
		}
	}
	return true
}
