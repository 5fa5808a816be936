package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func parsedCertificate(t *testing.T, pair KeyPair) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pair.CertPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestClientCertificateAuthenticatesItsUserOnly(t *testing.T) {
	ca := authority(t)
	client, err := IssueClient(ca, "app", now)
	if err != nil {
		t.Fatal(err)
	}
	cert := parsedCertificate(t, client)
	if got := cert.Subject.String(); got != "CN=app" {
		t.Errorf("subject %q, want CN=app alone (MariaDB's REQUIRE SUBJECT '/CN=app')", got)
	}
	roots := x509.NewCertPool()
	roots.AddCert(parsedCertificate(t, ca))
	verify := func(usage x509.ExtKeyUsage) error {
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := verify(x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("the client certificate does not verify for client authentication: %v", err)
	}
	if verify(x509.ExtKeyUsageServerAuth) == nil {
		t.Error("the client certificate verifies as a server's")
	}
	if _, err := IssueClient(ca, "", now); err == nil {
		t.Error("a client certificate was issued for no user")
	}
}

func TestClientRenewal(t *testing.T) {
	ca := authority(t)
	other := authority(t)
	client, err := IssueClient(ca, "app", now)
	if err != nil {
		t.Fatal(err)
	}
	reason, renewAt := ClientRenewal(client, ca, "app", now)
	if reason != "" || !renewAt.Equal(parsedCertificate(t, client).NotAfter.Add(-RenewBefore)) {
		t.Errorf("a fresh certificate: reason %q, renew at %v", reason, renewAt)
	}
	for _, tc := range []struct {
		name, want string
		client     KeyPair
		authority  KeyPair
		user       string
		at         time.Time
	}{
		{"none", "there is none", KeyPair{}, ca, "app", now},
		{"another authority", "did not sign", client, other, "app", now},
		{"its authority's key under another name", "issuer is not", client, renamed(t, ca, "payments"), "app", now},
		{"its authority's key and name under another key identifier", "authority key identifier", client, reidentified(t, ca, "orders"), "app", now},
		{"another user", "not the application user's", client, ca, "orders", now},
		{"near its expiry", "it expires at", client, ca, "app", now.Add(ClientValidity - RenewBefore)},
		{"a server's key", "not the certificate's", KeyPair{CertPEM: client.CertPEM, KeyPEM: server(t, ca, names, now).KeyPEM}, ca, "app", now},
		{"a server's certificate of the user's name", "client authentication alone", serverOfSubject(t, ca, "app"), ca, "app", now},
	} {
		reason, renewAt := ClientRenewal(tc.client, tc.authority, tc.user, tc.at)
		if !strings.Contains(reason, tc.want) || !renewAt.IsZero() {
			t.Errorf("%s: reason %q, renew at %v; want a reason with %q", tc.name, reason, renewAt, tc.want)
		}
	}
}

// renamed is an authority of ca's key and another common name: what it
// signed verifies by signature, but a TLS peer looks its issuer up by name.
func renamed(t *testing.T, ca KeyPair, name string) KeyPair {
	t.Helper()
	return authorityOfKey(t, ca, name, nil)
}

// reidentified is an authority of ca's key, the common name name (ca's
// own makes a copy of ca's subject) and another key identifier: a TLS peer
// passes it over for a certificate that names ca's.
func reidentified(t *testing.T, ca KeyPair, name string) KeyPair {
	t.Helper()
	return authorityOfKey(t, ca, name, []byte{1, 2, 3, 4})
}

// authorityOfKey is an authority of ca's key and the common name name, of the
// key identifier keyID (Go's own when nil).
func authorityOfKey(t *testing.T, ca KeyPair, name string, keyID []byte) KeyPair {
	t.Helper()
	_, key, err := ca.parse()
	if err != nil {
		t.Fatal(err)
	}
	template, err := authorityTemplate(name, now)
	if err != nil {
		t.Fatal(err)
	}
	template.SubjectKeyId = keyID
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: ca.KeyPEM}
}

// serverOfSubject is a server certificate whose subject is name alone, as
// a client certificate's is.
func serverOfSubject(t *testing.T, ca KeyPair, name string) KeyPair {
	t.Helper()
	pair, err := issue(ca, name, now, ClientValidity, func(template *x509.Certificate) {
		template.Subject = pkix.Name{CommonName: name}
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// TestClientIssuedAt reads when a client certificate was issued from the
// certificate alone, to the second its validity is written in.
func TestClientIssuedAt(t *testing.T) {
	authority, err := NewAuthority("clients", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 16, 45, 30, 0, time.UTC)
	issued, err := IssueClient(authority, "app", at)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ClientIssuedAt(issued.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(at) {
		t.Errorf("issued at %s, read %s", at, got)
	}
	if _, err := ClientIssuedAt([]byte("not a certificate")); err == nil {
		t.Error("read an issue time from something that is no certificate")
	}
}

// TestVerifiedUntil reads when a client certificate stops verifying: its
// own expiry, or its signer's, only the authorities that signed it
// counting, a signer renewed with the same key keeping it verifying, the
// first bundle holding a signer taken.
func TestVerifiedUntil(t *testing.T) {
	ca := authority(t) // expires after the certificate
	pair, err := IssueClient(ca, "app", now)
	if err != nil {
		t.Fatal(err)
	}
	soon := sameKeyAuthority(t, ca, now.Add(20*24*time.Hour))
	other, err := NewAuthority("another", now.Add(10*24*time.Hour-AuthorityValidity)) // expires first, signed nothing
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		bundles [][]byte
		want    time.Time
	}{
		{"its authority outlives it", [][]byte{ca.CertPEM}, now.Add(ClientValidity)},
		{"its authority expires first", [][]byte{soon}, now.Add(20 * 24 * time.Hour)},
		{"an authority that did not sign it does not count", [][]byte{JoinBundles(other.CertPEM, ca.CertPEM)}, now.Add(ClientValidity)},
		{"a signer renewed with the same key keeps it verifying", [][]byte{JoinBundles(soon, ca.CertPEM)}, now.Add(ClientValidity)},
		{"the first bundle with a signer", [][]byte{soon, ca.CertPEM}, now.Add(20 * 24 * time.Hour)},
		{"a bundle without a signer is passed over", [][]byte{other.CertPEM, soon}, now.Add(20 * 24 * time.Hour)},
		{"no signer: its own expiry", [][]byte{other.CertPEM, nil}, now.Add(ClientValidity)},
	} {
		got, err := VerifiedUntil(pair.CertPEM, c.bundles...)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%s: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	if _, err := VerifiedUntil([]byte("no PEM"), ca.CertPEM); err == nil {
		t.Error("no certificate, and no error")
	}
}

// sameKeyAuthority is authority's certificate issued again with its own
// key, expiring at notAfter.
func sameKeyAuthority(t *testing.T, authority KeyPair, notAfter time.Time) []byte {
	t.Helper()
	cert, key, err := authority.parse()
	if err != nil {
		t.Fatal(err)
	}
	template := *cert
	template.NotAfter = notAfter
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
