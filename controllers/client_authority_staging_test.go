package controllers

import (
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/pki"
)

// TestClientAuthorityStepsKeepEveryCertificateTrusted walks a replaced
// client authority through clientAuthorityStepFor, as the reconciler
// writes each step: the new authority is trusted beside the former one
// before the application user's certificate is issued from it, and the
// former one is dropped only once the certificate is the new authority's.
func TestClientAuthorityStepsKeepEveryCertificateTrusted(t *testing.T) {
	now := time.Now()
	former, err := pki.NewAuthority("dbpilot's client authority", now)
	if err != nil {
		t.Fatal(err)
	}
	users, err := pki.NewAuthority("the user's client authority", now)
	if err != nil {
		t.Fatal(err)
	}

	trusted := former.CertPEM
	if step := clientAuthorityStepFor(trusted, former.CertPEM, true); step != clientStepNone {
		t.Fatalf("nothing replaced: step %v, want none", step)
	}
	if step := clientAuthorityStepFor(trusted, users.CertPEM, false); step != clientStepTrust {
		t.Fatalf("replaced: step %v, want the new authority trusted first", step)
	}
	trusted = pki.JoinBundles(trusted, users.CertPEM)
	if step := clientAuthorityStepFor(trusted, users.CertPEM, false); step != clientStepIssue {
		t.Fatalf("both trusted, the certificate the former's: step %v, want it issued (once the pods verify with both)", step)
	}
	if step := clientAuthorityStepFor(trusted, users.CertPEM, true); step != clientStepRetire {
		t.Fatalf("both trusted, the certificate the new one's: step %v, want the former retired", step)
	}
	if step := clientAuthorityStepFor(users.CertPEM, users.CertPEM, true); step != clientStepNone {
		t.Fatalf("done: step %v, want none", step)
	}
	// Replaced again halfway: the third is trusted beside both first.
	third, err := pki.NewAuthority("a third", now)
	if err != nil {
		t.Fatal(err)
	}
	if step := clientAuthorityStepFor(trusted, third.CertPEM, false); step != clientStepTrust {
		t.Errorf("replaced halfway: step %v, want the third trusted first", step)
	}
}
