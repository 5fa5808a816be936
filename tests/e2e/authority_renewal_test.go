package e2e_test

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// TestOwnAuthoritiesRenewedInTheirLastYear gives a Database's own
// authorities, the server's and the client certificates', a copy of their
// certificate that expires in 100 days, as dbpilot's first ones will in
// their tenth year: dbpilot issues each again with its key and subject,
// valid 10 years, with an Event; the pods' Secret trusts each renewed
// copy in place of the former at once; the certificate they serve, not
// issued again, verifies with it, and the application user's
// certificate, not issued again either, carries the client authority's. (A user's authority of another name,
// near its end too, is never renewed: TestApplicationClientCertificate.)
func TestOwnAuthoritiesRenewedInTheirLastYear(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "authority-renewal")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	served := serverCertificate(g, db, authorityOf(g, db).Data[layout.KeyCACert])
	var application *x509.Certificate
	g.Eventually(func(g Gomega) {
		application = applicationCertificate(g, db, clientAuthorityOf(g, db).Data[layout.KeyCACert])
	}, convergeTimeout, pollInterval).Should(Succeed())

	type own struct {
		key     client.ObjectKey
		caKey   []byte
		subject string
		what    string
	}
	var authorities []own
	for i, secret := range []*corev1.Secret{authorityOf(g, db), clientAuthorityOf(g, db)} {
		cert, err := x509.ParseCertificate(pemBytes(g, secret.Data[layout.KeyCACert]))
		g.Expect(err).NotTo(HaveOccurred())
		expiring := sameKeyAuthority(g, pki.KeyPair{CertPEM: secret.Data[layout.KeyCACert], KeyPEM: secret.Data[layout.KeyCAKey]}, time.Now().Add(100*24*time.Hour))
		secret.Data[layout.KeyCACert] = expiring
		g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
		authorities = append(authorities, own{key: client.ObjectKeyFromObject(secret), caKey: secret.Data[layout.KeyCAKey], subject: cert.Subject.String(),
			what: []string{"certificate authority", "client certificate authority"}[i]})
	}

	for _, a := range authorities {
		g.Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, a.key, secret)).To(Succeed())
			g.Expect(secret.Data[layout.KeyCAKey]).To(Equal(a.caKey), "%s keeps its key", a.key.Name)
			cert, err := x509.ParseCertificate(pemBytes(g, secret.Data[layout.KeyCACert]))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cert.Subject.String()).To(Equal(a.subject))
			g.Expect(cert.NotAfter).To(BeTemporally("~", time.Now().Add(pki.AuthorityValidity), time.Hour), "%s renewed for 10 years", a.key.Name)
		}, convergeTimeout, pollInterval).Should(Succeed())
		g.Eventually(func(g Gomega) []string { return eventNotes(g, db) }, convergeTimeout, pollInterval).
			Should(ContainElement(ContainSubstring("Renewed the " + a.what + " in Secret " + a.key.Name + " with its key")))
	}

	// The pods' Secret trusts the renewed server authority in place of the
	// former copy; the certificate it serves was not issued again: the
	// same key signed it.
	renewed := authorityOf(g, db).Data[layout.KeyCACert]
	g.Eventually(func(g Gomega) {
		g.Expect(serverCertificate(g, db, renewed).Raw).To(Equal(served.Raw))
	}, convergeTimeout, pollInterval).Should(Succeed())
	// The client authority's renewed copy takes the former's place in the
	// pods' Secret; the application user's certificate is kept beside it.
	renewedClient := clientAuthorityOf(g, db).Data[layout.KeyCACert]
	g.Eventually(func(g Gomega) {
		g.Expect(applicationCertificate(g, db, renewedClient).Raw).To(Equal(application.Raw))
		g.Expect(eventNotes(g, db)).To(ContainElements(
			ContainSubstring("Secret ledger-tls trusts the renewed copy of its certificate's authority in place of the former one"),
			ContainSubstring("trusts the renewed client certificate authority of Secret ledger-client-ca in place of its former copy")))
		g.Expect(eventReasons(g, db)).To(ContainElements(dbpilotv1alpha1.EventReasonCertificateAuthorityRenewed, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRenewed,
			dbpilotv1alpha1.EventReasonCertificateAuthorityAdded, dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted))
	}, convergeTimeout, pollInterval).Should(Succeed())
	// Events are recorded as they happen, a little after the writes.
	g.Consistently(func(g Gomega) {
		for _, reason := range []string{dbpilotv1alpha1.EventReasonCertificateIssued, dbpilotv1alpha1.EventReasonClientCertificateIssued,
			dbpilotv1alpha1.EventReasonCertificateAuthorityRetired, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRetired} {
			g.Expect(eventReasons(g, db)).NotTo(ContainElement(reason), "nothing to issue again or retire for a renewed copy")
		}
	}, 3*time.Second, pollInterval).Should(Succeed())
	waitConverged(g, db)
	g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded).Status).To(BeEquivalentTo("False"))
}

// TestAuthorityRenewalThatFailsHoldsNothingBack makes dbpilot's authority
// Secret immutable, with a copy of its certificate in its last year: the
// renewal fails with a Warning Event, and the Database goes on converging
// (a scale-up) with the authority as it is.
func TestAuthorityRenewalThatFailsHoldsNothingBack(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "authority-immutable")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	secret := authorityOf(g, db)
	expiring := sameKeyAuthority(g, pki.KeyPair{CertPEM: secret.Data[layout.KeyCACert], KeyPEM: secret.Data[layout.KeyCAKey]}, time.Now().Add(100*24*time.Hour))
	secret.Data[layout.KeyCACert] = expiring
	secret.Immutable = ptr.To(true)
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, db) }, convergeTimeout, pollInterval).
		Should(ContainElement(dbpilotv1alpha1.EventReasonCertificateAuthorityRenewalFailed))

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](2) })
	waitConverged(g, db)
	g.Expect(db.Status.ReadyReplicas).To(Equal(int32(2)))
	g.Expect(authorityOf(g, db).Data[layout.KeyCACert]).To(Equal(expiring), "the authority serves as it is")
}
