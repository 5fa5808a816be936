package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// TestCertificateStepsKeepEveryServedCertificateTrusted walks a change of
// authority (dbpilot's to the user's) and a renewal under the same one
// through certificateStepFor, as the reconciler writes each step: the new
// authority is trusted before its certificate is served, the former one is
// dropped only after, and a renewal needs no staging.
func TestCertificateStepsKeepEveryServedCertificateTrusted(t *testing.T) {
	now := time.Now()
	former, err := pki.NewAuthority("dbpilot", now)
	if err != nil {
		t.Fatal(err)
	}
	users, err := pki.NewAuthority("the user's", now)
	if err != nil {
		t.Fatal(err)
	}
	both := pki.JoinBundles(former.CertPEM, users.CertPEM)

	// The Secret trusts dbpilot's authority and serves its certificate.
	trusted := former.CertPEM
	if step := certificateStepFor(trusted, users.CertPEM, true); step != stepTrust {
		t.Fatalf("switching authority: step %v, want the new authority trusted first", step)
	}
	trusted = pki.JoinBundles(trusted, users.CertPEM)
	if step := certificateStepFor(trusted, users.CertPEM, true); step != stepServe {
		t.Fatalf("with both authorities trusted: step %v, want the new certificate served", step)
	}
	// Served (the user's certificate is in place: it no longer changes).
	if step := certificateStepFor(trusted, users.CertPEM, false); step != stepRetire {
		t.Fatalf("serving the new certificate under both authorities: step %v, want the former one retired", step)
	}
	if step := certificateStepFor(users.CertPEM, users.CertPEM, false); step != stepNone {
		t.Fatalf("done: step %v, want none", step)
	}

	// A renewal under the authority the Secret trusts is served at once,
	// and so is one while both are still trusted.
	if step := certificateStepFor(users.CertPEM, users.CertPEM, true); step != stepServe {
		t.Errorf("renewal: step %v, want served at once", step)
	}
	if step := certificateStepFor(both, users.CertPEM, true); step != stepServe {
		t.Errorf("renewal while both are trusted: step %v, want served", step)
	}
	// Going back to dbpilot's authority halfway through: trusted already.
	if step := certificateStepFor(both, former.CertPEM, true); step != stepServe {
		t.Errorf("back to the former authority while both are trusted: step %v, want served", step)
	}

	// A renewed copy of the authority takes the former's place at once,
	// unless the certificate changes too.
	renewed, err := pki.RenewAuthority(users, now)
	if err != nil {
		t.Fatal(err)
	}
	if step := certificateStepFor(users.CertPEM, renewed.CertPEM, false); step != stepReplace {
		t.Errorf("a renewed copy: step %v, want it in place of the former", step)
	}
	if step := certificateStepFor(users.CertPEM, renewed.CertPEM, true); step != stepTrust {
		t.Errorf("a renewed copy and a new certificate: step %v, want it trusted first", step)
	}
}

func TestPodsNotTakingWaitsForPodsThatCannotTell(t *testing.T) {
	content := []byte("ca bundle")
	reports := map[string]*layout.CertificateStatus{
		"orders-0": {MountedAuthorities: layout.FileDigest(content)},
		"orders-1": {MountedAuthorities: layout.FileDigest([]byte("former ca"))},
		// No certificate mounted: nothing to wait for.
		"orders-2": {},
		// An instance program from before the report.
		"orders-3": nil,
	}
	got := podsNotTaking(reports, func(c layout.CertificateStatus) string { return c.MountedAuthorities }, content)
	if want := []string{"orders-1", "orders-3"}; !slices.Equal(got, want) {
		t.Errorf("pods not taking %v, want %v", got, want)
	}

	// The certificate served: an engine that has not presented one yet
	// (it just started, or presents neither) is waited for.
	certificate := []byte("server certificate")
	mounted := layout.FileDigest(certificate)
	reports = map[string]*layout.CertificateStatus{
		"orders-0": {MountedCertificate: mounted, ServedCertificate: mounted},
		"orders-1": {MountedCertificate: mounted},
		"orders-2": {},
	}
	got = podsNotTaking(reports, func(c layout.CertificateStatus) string { return c.ServedCertificate }, certificate)
	if want := []string{"orders-1"}; !slices.Equal(got, want) {
		t.Errorf("pods not serving %v, want %v", got, want)
	}
}
