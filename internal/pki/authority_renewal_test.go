package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

// TestRenewedAuthorityVerifiesBothWays renews an authority near its end
// and serves TLS across the renewal: a certificate issued before verifies
// against the renewed authority, and one issued after against the former
// copy, until it expires.
func TestRenewedAuthorityVerifiesBothWays(t *testing.T) {
	issuedAt := now.Add(-AuthorityValidity + 100*24*time.Hour) // 100 days left
	former, err := NewAuthority("orders.shop certificate authority", issuedAt)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := RenewAuthority(former, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(renewed.KeyPEM, former.KeyPEM) {
		t.Error("the renewed authority has another key")
	}
	if bytes.Equal(renewed.CertPEM, former.CertPEM) {
		t.Fatal("the certificate was not issued again")
	}
	formerCert, renewedCert := parsedCertificate(t, former), parsedCertificate(t, renewed)
	if !bytes.Equal(renewedCert.RawSubject, formerCert.RawSubject) || !bytes.Equal(renewedCert.RawIssuer, formerCert.RawSubject) || !bytes.Equal(renewedCert.SubjectKeyId, formerCert.SubjectKeyId) {
		t.Errorf("subject %q (key id %x), want %q (%x)", renewedCert.Subject, renewedCert.SubjectKeyId, formerCert.Subject, formerCert.SubjectKeyId)
	}
	if !renewedCert.NotAfter.Equal(now.Add(AuthorityValidity).Truncate(time.Second)) || !renewedCert.IsCA {
		t.Errorf("renewed: expires %s, authority %t", renewedCert.NotAfter, renewedCert.IsCA)
	}
	if problem := AuthorityProblem(renewed, now); problem != "" {
		t.Errorf("the renewed authority cannot sign: %s", problem)
	}

	before := server(t, former, names, now.Add(-time.Hour))
	after := server(t, renewed, names, now)
	for _, c := range []struct {
		name          string
		pair, trusted KeyPair
	}{
		{"issued before, the renewed copy trusted", before, renewed},
		{"issued after, the former copy trusted", after, former},
		{"issued after, the renewed copy trusted", after, renewed},
	} {
		if err := handshake(t, c.pair, c.trusted, "orders-rw"); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	other, err := NewAuthority("orders.shop certificate authority", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, after, other, "orders-rw"); err == nil {
		t.Error("an authority of the same name with another key verified the certificate")
	}
}

func TestAuthorityRenewal(t *testing.T) {
	const name = "orders.shop certificate authority"
	ca, err := NewAuthority(name, now)
	if err != nil {
		t.Fatal(err)
	}
	due := now.Add(AuthorityValidity - AuthorityRenewBefore)
	users, err := NewAuthority("the user's", now)
	if err != nil {
		t.Fatal(err)
	}
	stranger := ca
	stranger.KeyPEM = users.KeyPEM
	// An authority with dbpilot's subject that another signed.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template, err := authorityTemplate(name, now)
	if err != nil {
		t.Fatal(err)
	}
	usersCert, usersKey, err := users.parse()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, usersCert, key.Public(), usersKey)
	if err != nil {
		t.Fatal(err)
	}
	intermediate, err := encode(der, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		authority KeyPair
		at        time.Time
		reason    string
		renewAt   time.Time
	}{
		{"new", ca, now, "", due},
		{"a minute before its year", ca, due.Add(-time.Minute), "", due},
		{"in its last year", ca, due, "expires at 2036-11-22T12:00:00Z", time.Time{}},
		{"expired", ca, now.Add(AuthorityValidity + time.Hour), "expires at 2036", time.Time{}},
		{"another name: the user's", users, due, "", time.Time{}},
		{"another key", stranger, due, "", time.Time{}},
		{"dbpilot's subject, another's signature", intermediate, due, "", time.Time{}},
	} {
		reason, renewAt := AuthorityRenewal(c.authority, name, c.at)
		if !strings.HasPrefix(reason, c.reason) || (c.reason == "") != (reason == "") || !renewAt.Equal(c.renewAt.Truncate(time.Second)) {
			t.Errorf("%s: reason %q renewAt %s, want %q and %s", c.name, reason, renewAt, c.reason, c.renewAt)
		}
	}
}

func TestOneAuthority(t *testing.T) {
	former, err := NewAuthority("orders.shop client certificate authority", now.Add(-AuthorityValidity+100*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := RenewAuthority(former, now)
	if err != nil {
		t.Fatal(err)
	}
	sameName, err := NewAuthority("orders.shop client certificate authority", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		bundle []byte
		want   bool
	}{
		{"the former copy", former.CertPEM, true},
		{"the former copy and the renewed one", JoinBundles(former.CertPEM, renewed.CertPEM), true},
		{"itself", renewed.CertPEM, true},
		{"nothing", nil, false},
		{"another key of the same name", sameName.CertPEM, false},
		{"the same key under another name", renamed(t, former, "payments").CertPEM, false},
		{"the same key and name under another key identifier", reidentified(t, former, "orders.shop client certificate authority").CertPEM, false},
		{"a copy beside another authority", JoinBundles(former.CertPEM, sameName.CertPEM), false},
		{"another authority beside a copy", JoinBundles(sameName.CertPEM, former.CertPEM), false},
	} {
		if got := OneAuthority(c.bundle, renewed.CertPEM); got != c.want {
			t.Errorf("%s: %t, want %t", c.name, got, c.want)
		}
		if got := OneAuthority(renewed.CertPEM, c.bundle); got != c.want {
			t.Errorf("%s, the other way round: %t, want %t", c.name, got, c.want)
		}
	}
}
