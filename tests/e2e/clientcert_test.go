package e2e_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
	"github.com/dbpilot/dbpilot/internal/pki/pkitest"
)

// applicationCertificate reads the application user's client certificate
// Secret and expects its certificate to be the user's, for client
// authentication, from the authority in clientAuthorityPEM, which the
// Secret carries and the pods' server certificate Secret trusts; it
// returns the certificate.
func applicationCertificate(g Gomega, db *dbpilotv1alpha1.Database, clientAuthorityPEM []byte) *x509.Certificate {
	ctx := context.Background()
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ApplicationCertificateSecretName()}, secret)).To(Succeed())
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(secret.Data[layout.KeyCACert]).To(Equal(clientAuthorityPEM), "the Secret carries its authority's certificate")
	pair := pki.KeyPair{CertPEM: secret.Data[layout.KeyTLSCert], KeyPEM: secret.Data[layout.KeyTLSKey]}
	reason, _ := pki.ClientRenewal(pair, pki.KeyPair{CertPEM: clientAuthorityPEM, KeyPEM: clientAuthorityOf(g, db).Data[layout.KeyCAKey]}, desired.AppUsername, time.Now())
	g.Expect(reason).To(BeEmpty(), "the client certificate is the user's and its key pairs with it")
	block, _ := pem.Decode(pair.CertPEM)
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(clientAuthorityPEM)).To(BeTrue())
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cert.Subject.CommonName).To(Equal(desired.AppUsername))

	server := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, server)).To(Succeed())
	g.Expect(server.Data[layout.KeyClientCACert]).To(Equal(clientAuthorityPEM), "the pods trust the client authority")
	return cert
}

func clientAuthorityOf(g Gomega, db *dbpilotv1alpha1.Database) *corev1.Secret {
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.ClientAuthoritySecretName()}, secret)).To(Succeed())
	return secret
}

// TestApplicationClientCertificate checks the client certificate dbpilot
// keeps for a Database's application user: issued whether required or
// not, its authority trusted by the pods; renewed when it nears its
// expiry, issued again when its Secret is deleted, and from a new
// authority when the user replaces it; requiring it gives the instance
// program the flag.
func TestApplicationClientCertificate(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "clientcert")
	startOperator(t, ns)

	db := newDatabase(ns, "orders", dbpilotv1alpha1.EngineMariaDB)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	authority := clientAuthorityOf(g, db)
	g.Expect(authority.OwnerReferences).To(ConsistOf(HaveField("UID", db.UID)))
	g.Expect(authority.Data[layout.KeyCACert]).NotTo(Equal(authorityOf(g, db).Data[layout.KeyCACert]), "client certificates have an authority of their own")
	first := applicationCertificate(g, db, authority.Data[layout.KeyCACert])
	g.Expect(first.NotAfter).To(BeTemporally("~", time.Now().Add(pki.ClientValidity), time.Hour))
	expectClientCertificateExpiry(g, db, first.NotAfter, "the certificate expires before its authority")
	g.Expect(statefulSetOf(g, db).Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--require-client-certificate"))

	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{ClientCertificateRequired: true}
	})
	g.Eventually(func(g Gomega) []string { return statefulSetOf(g, db).Spec.Template.Spec.Containers[0].Args }, convergeTimeout, pollInterval).
		Should(ContainElement("--require-client-certificate"))

	// One that expires in ten days is issued again.
	ca := pki.KeyPair{CertPEM: authority.Data[layout.KeyCACert], KeyPEM: authority.Data[layout.KeyCAKey]}
	expiring, err := pki.IssueClient(ca, desired.AppUsername, time.Now().Add(10*24*time.Hour-pki.ClientValidity))
	g.Expect(err).NotTo(HaveOccurred())
	current := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ApplicationCertificateSecretName()}, current)).To(Succeed())
	current.Data[layout.KeyTLSCert], current.Data[layout.KeyTLSKey] = expiring.CertPEM, expiring.KeyPEM
	g.Expect(k8sClient.Update(ctx, current)).To(Succeed())
	g.Eventually(func(g Gomega) {
		renewed := applicationCertificate(g, db, ca.CertPEM)
		g.Expect(renewed.NotAfter).To(BeTemporally("~", time.Now().Add(pki.ClientValidity), time.Hour))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, db) }, convergeTimeout, pollInterval).
		Should(ContainElement(dbpilotv1alpha1.EventReasonClientCertificateIssued))
	expectClientCertificateExpiry(g, db, applicationCertificate(g, db, ca.CertPEM).NotAfter, "the renewed certificate's expiry")

	// Deleted, it is issued again, and an Event says so (the recorder
	// counts it in the series of the renewal's, which has the same
	// reason and action).
	issued := eventOccurrences(g, db, dbpilotv1alpha1.EventReasonClientCertificateIssued)
	g.Expect(k8sClient.Delete(ctx, current)).To(Succeed())
	g.Eventually(func(g Gomega) { applicationCertificate(g, db, ca.CertPEM) }, convergeTimeout, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) int { return eventOccurrences(g, db, dbpilotv1alpha1.EventReasonClientCertificateIssued) }, convergeTimeout, pollInterval).
		Should(Equal(issued + 1))

	// The user replaces the authority: the pods trust the new one beside
	// the former, the certificate is issued from it only then, and the
	// former is retired the overlap after. The user's expires in 20 days,
	// before the certificate issued from it.
	own, err := pki.NewAuthority("the user's client authority", time.Now().Add(20*24*time.Hour-pki.AuthorityValidity))
	g.Expect(err).NotTo(HaveOccurred())
	authority.Data = map[string][]byte{layout.KeyCACert: own.CertPEM, layout.KeyCAKey: own.KeyPEM}
	podsSecret := watchNamed[*corev1.Secret](t, g, &corev1.SecretList{}, ns, db.ServerCertificateSecretName())
	g.Expect(k8sClient.Update(ctx, authority)).To(Succeed())
	replacement := watchClientAuthorityReplacement(g, db, ca.CertPEM, own.CertPEM)
	g.Expect(replacement.untrustedIssue).To(BeEmpty(), "the certificate is never issued from an authority the pods do not trust")
	g.Expect(podsSecret()).To(ContainElement(WithTransform(func(s *corev1.Secret) bool {
		trusted := s.Data[layout.KeyClientCACert]
		return pki.BundleContains(trusted, ca.CertPEM) && pki.BundleContains(trusted, own.CertPEM)
	}, BeTrue())), "the new authority is trusted beside the former one first")
	// The certificate, issued from the new authority, tells when it was
	// issued (to the second, no later); the former authority was seen
	// retired no earlier than it was.
	issuedAt := applicationCertificate(g, db, own.CertPEM).NotAfter.Add(-pki.ClientValidity)
	g.Expect(replacement.retired.Sub(issuedAt)).To(BeNumerically(">=", clientAuthorityOverlap),
		"the former authority is trusted for the overlap after the certificate is issued from the new one")
	ownCert, err := x509.ParseCertificate(pemBytes(g, own.CertPEM))
	g.Expect(err).NotTo(HaveOccurred())
	expectClientCertificateExpiry(g, db, ownCert.NotAfter, "the user's authority expires first")
	g.Eventually(func(g Gomega) []string { return eventReasons(g, db) }, convergeTimeout, pollInterval).
		Should(ContainElements(dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRetired))

	// The user renews it with its key, name and key identifier: the pods'
	// Secret trusts the renewed copy in place of the former at once, and
	// the certificate is kept.
	held := applicationCertificate(g, db, own.CertPEM)
	own.CertPEM = sameKeyAuthority(g, own, time.Now().Add(2*pki.ClientValidity))
	authority = clientAuthorityOf(g, db)
	authority.Data[layout.KeyCACert] = own.CertPEM
	g.Expect(k8sClient.Update(ctx, authority)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(applicationCertificate(g, db, own.CertPEM).Raw).To(Equal(held.Raw))
		g.Expect(eventNotes(g, db)).To(ContainElement(ContainSubstring("trusts the renewed client certificate authority of Secret orders-client-ca in place of its former copy")))
	}, convergeTimeout, pollInterval).Should(Succeed())
	expectClientCertificateExpiry(g, db, held.NotAfter, "the renewed authority outlives the certificate")

	// An authority that cannot sign (its key is another's) shows in
	// Degraded, and the pods keep trusting the one they have; deleted,
	// a new one is created and the certificate issued from it.
	other, err := pki.NewAuthority("another", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	authority = clientAuthorityOf(g, db)
	authority.Data[layout.KeyCAKey] = other.KeyPEM
	g.Expect(k8sClient.Update(ctx, authority)).To(Succeed())
	g.Eventually(func(g Gomega) *metav1.Condition {
		fetch(g, db)
		return findCondition(db, dbpilotv1alpha1.ConditionDegraded)
	}, convergeTimeout, pollInterval).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", dbpilotv1alpha1.ReasonClientCertificateInvalid),
		HaveField("Message", ContainSubstring(db.ClientAuthoritySecretName()))))
	g.Consistently(func(g Gomega) {
		for name, key := range map[string]string{db.ServerCertificateSecretName(): layout.KeyClientCACert, db.ApplicationCertificateSecretName(): layout.KeyCACert} {
			secret := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)).To(Succeed())
			g.Expect(secret.Data[key]).To(Equal(own.CertPEM), "Secret %s", name)
		}
	}, 3*time.Second, pollInterval).Should(Succeed())
	g.Expect(k8sClient.Delete(ctx, authority)).To(Succeed())
	g.Eventually(func(g Gomega) {
		renewed := clientAuthorityOf(g, db)
		g.Expect(renewed.UID).NotTo(Equal(authority.UID))
		applicationCertificate(g, db, renewed.Data[layout.KeyCACert])
		fetch(g, db)
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded)).To(HaveField("Status", metav1.ConditionFalse))
	}, convergeTimeout, pollInterval).Should(Succeed())
	renewed := clientAuthorityOf(g, db).Data[layout.KeyCACert]
	expectClientCertificateExpiry(g, db, applicationCertificate(g, db, renewed).NotAfter, "the new authority outlives the certificate")

	// Paused, nothing is issued, but the expiry metric still follows the
	// certificate, for the alert to warn.
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Paused = true })
	g.Eventually(func(g Gomega) dbpilotv1alpha1.Phase { fetch(g, db); return db.Status.Phase }, convergeTimeout, pollInterval).
		Should(Equal(dbpilotv1alpha1.PhasePaused))
	renewedAuthority := clientAuthorityOf(g, db)
	soon, err := pki.IssueClient(pki.KeyPair{CertPEM: renewed, KeyPEM: renewedAuthority.Data[layout.KeyCAKey]}, desired.AppUsername,
		time.Now().Add(10*24*time.Hour-pki.ClientValidity))
	g.Expect(err).NotTo(HaveOccurred())
	current = &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ApplicationCertificateSecretName()}, current)).To(Succeed())
	current.Data[layout.KeyTLSCert], current.Data[layout.KeyTLSKey] = soon.CertPEM, soon.KeyPEM
	g.Expect(k8sClient.Update(ctx, current)).To(Succeed())
	soonCert, err := x509.ParseCertificate(pemBytes(g, soon.CertPEM))
	g.Expect(err).NotTo(HaveOccurred())
	expectClientCertificateExpiry(g, db, soonCert.NotAfter, "a paused Database's certificate")
	g.Consistently(func(g Gomega) []byte {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(current), current)).To(Succeed())
		return current.Data[layout.KeyTLSCert]
	}, 3*time.Second, pollInterval).Should(Equal(soon.CertPEM), "a paused Database's certificate is not issued again")

	// What the pods trust counts, and only the authorities that signed
	// the certificate: its authority issued again with the same key,
	// expiring in 5 days, and another expiring in 3 that signed nothing.
	trustedSoon := sameKeyAuthority(g, pki.KeyPair{CertPEM: renewed, KeyPEM: renewedAuthority.Data[layout.KeyCAKey]}, time.Now().Add(5*24*time.Hour))
	unrelated, err := pki.NewAuthority("signs nothing here", time.Now().Add(3*24*time.Hour-pki.AuthorityValidity))
	g.Expect(err).NotTo(HaveOccurred())
	pods := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ServerCertificateSecretName()}, pods)).To(Succeed())
	pods.Data[layout.KeyClientCACert] = pki.JoinBundles(unrelated.CertPEM, trustedSoon)
	g.Expect(k8sClient.Update(ctx, pods)).To(Succeed())
	trustedSoonCert, err := x509.ParseCertificate(pemBytes(g, trustedSoon))
	g.Expect(err).NotTo(HaveOccurred())
	expectClientCertificateExpiry(g, db, trustedSoonCert.NotAfter, "the authority the pods trust, not the one the certificate's Secret carries nor one that signed nothing")

	// Deleted, the Database's series goes.
	g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())
	g.Eventually(func(g Gomega) int {
		return len(gatheredSeries(g, clientCertificateExpiryMetric, map[string]string{"namespace": db.Namespace, "database": db.Name}))
	}, convergeTimeout, pollInterval).Should(BeZero(), "no expiry series of a deleted Database")
}

// sameKeyAuthority is authority's certificate issued again with its own
// key, expiring at notAfter.
func sameKeyAuthority(g Gomega, authority pki.KeyPair, notAfter time.Time) []byte {
	expiring, err := pkitest.ExpiringCopy(authority.CertPEM, authority.KeyPEM, notAfter)
	g.Expect(err).NotTo(HaveOccurred())
	return expiring
}

// clientCertificateExpiryMetric is the expiry series of the application
// user's certificate.
const clientCertificateExpiryMetric = "dbpilot_client_certificate_expiry_timestamp_seconds"

// expectClientCertificateExpiry waits for the Database's client
// certificate expiry series to be at.
func expectClientCertificateExpiry(g Gomega, db *dbpilotv1alpha1.Database, at time.Time, why string) {
	g.Eventually(func(g Gomega) float64 {
		return gathered(g, clientCertificateExpiryMetric, map[string]string{"namespace": db.Namespace, "database": db.Name})
	}, convergeTimeout, pollInterval).Should(Equal(float64(at.Unix())), why)
}

// TestApplicationClientCertificateSecretOfTheUser creates a Secret of the
// client certificate's name before the Database, without dbpilot's labels:
// it is never written, and the Database is Degraded, naming it.
func TestApplicationClientCertificateSecretOfTheUser(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "clientcert-own")
	startOperator(t, ns)

	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-app-tls"}, Data: map[string][]byte{"note": []byte("mine")}}
	g.Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
	db := newDatabase(ns, "shop", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	g.Eventually(func(g Gomega) *metav1.Condition {
		fetch(g, db)
		return findCondition(db, dbpilotv1alpha1.ConditionDegraded)
	}, convergeTimeout, pollInterval).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", dbpilotv1alpha1.ReasonClientCertificateInvalid),
		HaveField("Message", ContainSubstring("Secret shop-app-tls exists and is not dbpilot's"))))
	g.Consistently(func(g Gomega) string {
		secret := &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), secret)).To(Succeed())
		g.Expect(secret.Data).To(Equal(theirs.Data))
		return secret.ResourceVersion
	}, 3*time.Second, pollInterval).Should(Equal(theirs.ResourceVersion))
}

// clientAuthorityOverlap is how long the suite's operator keeps a
// replaced client authority trusted after the certificate is issued from
// the new one.
const clientAuthorityOverlap = 5 * time.Second

// clientAuthorityReplacement is what watchClientAuthorityReplacement saw.
type clientAuthorityReplacement struct {
	// untrustedIssue describes a moment the application user's
	// certificate was the new authority's while the pods' Secret did not
	// trust it; empty when there was none.
	untrustedIssue string
	// retired is when the pods' Secret was first seen trusting the new
	// authority alone.
	retired time.Time
}

// watchClientAuthorityReplacement polls the application user's
// certificate Secret, then the pods' Secret, until the latter trusts only
// the new client authority (to).
func watchClientAuthorityReplacement(g Gomega, db *dbpilotv1alpha1.Database, from, to []byte) clientAuthorityReplacement {
	ctx := context.Background()
	var seen clientAuthorityReplacement
	g.Eventually(func(g Gomega) {
		application, server := &corev1.Secret{}, &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ApplicationCertificateSecretName()}, application)).To(Succeed())
		// Read second: a certificate from the new authority seen first
		// must find it trusted.
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, server)).To(Succeed())
		trusted := server.Data[layout.KeyClientCACert]
		now := time.Now()
		if bytes.Equal(application.Data[layout.KeyCACert], to) && !pki.BundleContains(trusted, to) && seen.untrustedIssue == "" {
			seen.untrustedIssue = fmt.Sprintf("at %s the certificate was the new authority's, which the pods' Secret did not trust", now.Format(time.RFC3339Nano))
		}
		g.Expect(trusted).To(Equal(to))
		seen.retired = now
	}, convergeTimeout, pollInterval).Should(Succeed())
	return seen
}

// eventOccurrences counts the Events of reason recorded on the Database,
// each of a series as many times as it occurred.
func eventOccurrences(g Gomega, db *dbpilotv1alpha1.Database, reason string) int {
	n := 0
	for _, event := range databaseEvents(g, db) {
		switch {
		case event.Reason != reason:
		case event.Series != nil:
			n += int(event.Series.Count)
		default:
			n++
		}
	}
	return n
}
