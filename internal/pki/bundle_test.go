package pki

import (
	"bytes"
	"testing"
	"time"
)

func TestJoinBundlesAddsOnlyWhatIsMissing(t *testing.T) {
	now := time.Now()
	var roots [3][]byte
	for i := range roots {
		authority, err := NewAuthority("root", now)
		if err != nil {
			t.Fatal(err)
		}
		roots[i] = authority.CertPEM
	}
	ab := append(append([]byte{}, roots[0]...), roots[1]...)

	if !BundleContains(ab, roots[1]) || !BundleContains(ab, ab) || BundleContains(ab, roots[2]) || BundleContains(roots[0], ab) {
		t.Error("BundleContains answers wrong for a two-root bundle")
	}
	if got := JoinBundles(ab, roots[0]); !bytes.Equal(got, ab) {
		t.Errorf("joining a root the bundle has changed it:\n%s", got)
	}
	joined := JoinBundles(ab, append(append([]byte{}, roots[1]...), roots[2]...))
	if !bytes.HasPrefix(joined, ab) || !BundleContains(joined, roots[2]) || len(bundleCertificates(joined)) != 3 {
		t.Errorf("joined bundle holds %d certificates, want the two in order then the new one:\n%s", len(bundleCertificates(joined)), joined)
	}
	// A bundle without a final newline still yields separate blocks.
	joined = JoinBundles(bytes.TrimRight(roots[0], "\n"), roots[1])
	if len(bundleCertificates(joined)) != 2 {
		t.Errorf("joined bundle holds %d certificates, want 2:\n%s", len(bundleCertificates(joined)), joined)
	}
}

func TestLeafCertificateIsTheChainsFirst(t *testing.T) {
	now := time.Now()
	authority, err := NewAuthority("root", now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := IssueServer(authority, []string{"db"}, now)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(append([]byte{}, server.KeyPEM...), append(append([]byte{}, server.CertPEM...), authority.CertPEM...)...)
	if got := LeafCertificate(chain); !bytes.Equal(got, bundleCertificates(server.CertPEM)[0]) {
		t.Error("the leaf of key, server and root is not the server's certificate")
	}
	if got := LeafCertificate(server.KeyPEM); got != nil {
		t.Errorf("a bundle without certificates has a leaf of %d bytes", len(got))
	}
}
