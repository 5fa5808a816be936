// Package pki issues the certificates a Database serves TLS with: a
// certificate authority of its own, which clients trust, and a server
// certificate it signs for the names the Database is reached by; and the
// client certificate its application user may be asked to present, of
// another authority, which the engines trust.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Validity of what is issued. The authority lasts long, since every client
// trusts it; server certificates are renewed well before they expire,
// without restarting anything.
const (
	AuthorityValidity = 10 * 365 * 24 * time.Hour
	ServerValidity    = 365 * 24 * time.Hour
	// RenewBefore is how long before its expiry a server certificate is
	// replaced.
	RenewBefore = 30 * 24 * time.Hour
	// backdate covers clocks a little behind the issuer's.
	backdate = 5 * time.Minute
	// organization is the organization of every subject dbpilot names.
	organization = "dbpilot"
)

// KeyPair is a certificate and its private key, PEM-encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// NewAuthority creates a self-signed certificate authority that signs
// certificates and no other authority: a Database's server certificates,
// or its client certificates.
func NewAuthority(commonName string, now time.Time) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	template, err := authorityTemplate(commonName, now)
	if err != nil {
		return KeyPair{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return KeyPair{}, err
	}
	return encode(der, key)
}

// authorityTemplate is the certificate of an authority named commonName,
// valid from now for AuthorityValidity, that signs certificates and no
// other authority.
func authorityTemplate(commonName string, now time.Time) (*x509.Certificate, error) {
	template, err := certificateTemplate(commonName, now, AuthorityValidity)
	if err != nil {
		return nil, err
	}
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.MaxPathLenZero = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	return template, nil
}

// IssueServer signs a server certificate for names (DNS names, or IP
// addresses; the first is also its common name) with the authority.
func IssueServer(authority KeyPair, names []string, now time.Time) (KeyPair, error) {
	if len(names) == 0 {
		return KeyPair{}, errors.New("a server certificate needs a name")
	}
	return issue(authority, names[0], now, ServerValidity, func(template *x509.Certificate) {
		for _, name := range names {
			if ip := net.ParseIP(name); ip != nil {
				template.IPAddresses = append(template.IPAddresses, ip)
			} else {
				template.DNSNames = append(template.DNSNames, name)
			}
		}
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
}

// issue signs, with the authority, a certificate of a new key for
// commonName, valid from now for validity, for digital signatures, as
// describe makes it.
func issue(authority KeyPair, commonName string, now time.Time, validity time.Duration, describe func(*x509.Certificate)) (KeyPair, error) {
	caCert, caKey, err := authority.parse()
	if err != nil {
		return KeyPair{}, fmt.Errorf("the certificate authority: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	template, err := certificateTemplate(commonName, now, validity)
	if err != nil {
		return KeyPair{}, err
	}
	template.KeyUsage = x509.KeyUsageDigitalSignature
	describe(template)
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, key.Public(), caKey)
	if err != nil {
		return KeyPair{}, err
	}
	return encode(der, key)
}

// AuthorityProblem says why the authority cannot sign (it does not parse,
// its key is not its certificate's, it is no authority, or it has expired
// at now); empty when it can.
func AuthorityProblem(authority KeyPair, now time.Time) string {
	cert, _, err := authority.parse()
	switch {
	case err != nil:
		return err.Error()
	case !cert.IsCA:
		return "the certificate is not a certificate authority"
	case now.After(cert.NotAfter):
		return "it expired at " + cert.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}

// ServerRenewal says why the server certificate must be issued again: it
// is missing or does not parse, its key is not its own, the authority did
// not sign it, its names are not names, or it expires within RenewBefore
// of now. Empty when it is good; renewAt is then when it will need
// renewing.
func ServerRenewal(server, authority KeyPair, names []string, now time.Time) (reason string, renewAt time.Time) {
	cert, reason := signedBy(server, authority)
	switch {
	case reason != "":
		return reason, time.Time{}
	case !slices.Equal(certificateNames(cert), sortedNames(names)):
		return "the names it is reached by changed", time.Time{}
	}
	return renewalOf(cert, now)
}

// signedBy parses pair and checks that the authority signed it and is
// named and identified its issuer, as a TLS peer builds the chain; reason
// says why it is not so (there is no pair, it does not parse, its key is
// not its certificate's, or another authority signed it or is named or
// identified).
func signedBy(pair, authority KeyPair) (cert *x509.Certificate, reason string) {
	if len(pair.CertPEM) == 0 || len(pair.KeyPEM) == 0 {
		return nil, "there is none"
	}
	cert, _, err := pair.parse()
	if err != nil {
		return nil, err.Error()
	}
	caCert, _, err := authority.parse()
	if err != nil {
		return nil, "the certificate authority: " + err.Error()
	}
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		return nil, "the certificate authority did not sign it"
	}
	if !bytes.Equal(cert.RawIssuer, caCert.RawSubject) {
		return nil, "its issuer is not the certificate authority's name"
	}
	if len(cert.AuthorityKeyId) > 0 && len(caCert.SubjectKeyId) > 0 && !bytes.Equal(cert.AuthorityKeyId, caCert.SubjectKeyId) {
		// OpenSSL passes over an issuer of another key identifier.
		return nil, "its authority key identifier is not the certificate authority's"
	}
	return cert, ""
}

// renewalOf is when cert is to be renewed (RenewBefore its expiry), or
// why it is due at now.
func renewalOf(cert *x509.Certificate, now time.Time) (reason string, renewAt time.Time) {
	renewAt = cert.NotAfter.Add(-RenewBefore)
	if !now.Before(renewAt) {
		return "it expires at " + cert.NotAfter.UTC().Format(time.RFC3339), time.Time{}
	}
	return "", renewAt
}

// EarliestExpiry is when the first of the certificates in the PEM
// bundles expires: a chain stops verifying then.
func EarliestExpiry(bundles ...[]byte) (time.Time, error) {
	var earliest time.Time
	for _, bundle := range bundles {
		certs, err := certificates(bundle)
		if err != nil {
			return time.Time{}, err
		}
		for _, cert := range certs {
			if earliest.IsZero() || cert.NotAfter.Before(earliest) {
				earliest = cert.NotAfter
			}
		}
	}
	if earliest.IsZero() {
		return time.Time{}, errors.New("no PEM certificate")
	}
	return earliest, nil
}

// VerifiedUntil is when the certificate of certPEM (its first) stops
// verifying against the authorities of the first of bundles that holds
// one whose key signed it: when it expires, or before that when those
// signers have all expired (one renewed with the same key signs it as
// well, and keeps it verifying). Authorities that did not sign it do not
// count; without a signer in any bundle it is the certificate's expiry.
func VerifiedUntil(certPEM []byte, bundles ...[]byte) (time.Time, error) {
	cert, err := parseLeaf(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	for _, bundle := range bundles {
		authorities, err := certificates(bundle)
		if err != nil {
			return time.Time{}, err
		}
		var signers time.Time
		for _, authority := range authorities {
			if cert.CheckSignatureFrom(authority) == nil && authority.NotAfter.After(signers) {
				signers = authority.NotAfter
			}
		}
		if !signers.IsZero() {
			return earlier(cert.NotAfter, signers), nil
		}
	}
	return cert.NotAfter, nil
}

// earlier is the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// certificateNames are the DNS names and IP addresses a certificate
// carries, sorted.
func certificateNames(cert *x509.Certificate) []string {
	names := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	slices.Sort(names)
	return names
}

// sortedNames are names, IP addresses in their canonical form, sorted.
func sortedNames(names []string) []string {
	sorted := make([]string, 0, len(names))
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			name = ip.String()
		}
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	return sorted
}

func certificateTemplate(commonName string, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{organization}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
	}, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (KeyPair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parse decodes the pair and checks that the key is the certificate's.
func (k KeyPair) parse() (*x509.Certificate, crypto.Signer, error) {
	certBlock, _ := pem.Decode(k.CertPEM)
	if certBlock == nil || certBlock.Type != "CERTIFICATE" {
		return nil, nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	keyBlock, _ := pem.Decode(k.KeyPEM)
	if keyBlock == nil {
		return nil, nil, errors.New("no PEM private key")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the private key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the private key cannot sign")
	}
	public, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(public, cert.RawSubjectPublicKeyInfo) {
		return nil, nil, errors.New("the private key is not the certificate's")
	}
	return cert, key, nil
}
