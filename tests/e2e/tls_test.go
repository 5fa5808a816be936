package e2e_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// serverCertificate reads the Database's server certificate Secret and
// expects the certificate to verify against authorityPEM for every name a
// client or an instance reaches it by; it returns the certificate.
func serverCertificate(g Gomega, db *dbpilotv1alpha1.Database, authorityPEM []byte) *x509.Certificate {
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, secret)).To(Succeed())
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(secret.Data[layout.KeyCACert]).To(Equal(authorityPEM), "the Secret carries the authority's certificate")
	block, _ := pem.Decode(secret.Data[layout.KeyTLSCert])
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(authorityPEM)).To(BeTrue())
	for _, name := range []string{db.ReadWriteServiceName(), db.ServiceHost(db.ReadWriteServiceName()), db.ServiceHost(db.ReadOnlyServiceName()) + ".cluster.local",
		db.PodName(1) + "." + db.ServiceHost(db.HeadlessServiceName())} {
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		g.Expect(err).NotTo(HaveOccurred(), "verifying for %s", name)
	}
	return cert
}

func authorityOf(g Gomega, db *dbpilotv1alpha1.Database) *corev1.Secret {
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.CertificateAuthoritySecretName()}, secret)).To(Succeed())
	return secret
}

// TestServerCertificateIssuedAndRenewed checks the certificate authority
// and the server certificate dbpilot keeps for a Database: the pods mount
// it; one that expires within 30 days is issued again (with an Event), and
// so is one the authority no longer signs, after the user replaced the
// authority with their own.
func TestServerCertificateIssuedAndRenewed(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tls")
	startOperator(t, ns)

	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	authority := authorityOf(g, db)
	g.Expect(authority.OwnerReferences).To(ConsistOf(HaveField("UID", db.UID)))
	first := serverCertificate(g, db, authority.Data[layout.KeyCACert])
	g.Expect(first.NotAfter).To(BeTemporally("~", time.Now().Add(pki.ServerValidity), time.Hour))
	g.Expect(certificateExpiry(g, db)).To(Equal(float64(first.NotAfter.Unix())), "the expiry metric follows the certificate served")
	template := statefulSetOf(g, db).Spec.Template.Spec
	g.Expect(template.Volumes).To(ContainElement(And(HaveField("Name", "tls"), HaveField("Secret.SecretName", db.ServerCertificateSecretName()))))
	g.Expect(template.Containers[0].Args).To(ContainElement("--tls-dir=" + layout.TLSDir))

	// A certificate that expires in ten days is issued again.
	ca := pki.KeyPair{CertPEM: authority.Data[layout.KeyCACert], KeyPEM: authority.Data[layout.KeyCAKey]}
	expiring, err := pki.IssueServer(ca, db.ServerNames(), time.Now().Add(10*24*time.Hour-pki.ServerValidity))
	g.Expect(err).NotTo(HaveOccurred())
	setServerCertificate(g, db, expiring)
	g.Eventually(func(g Gomega) {
		renewed := serverCertificate(g, db, ca.CertPEM)
		g.Expect(renewed.NotAfter).To(BeTemporally(">", time.Now().Add(pki.ServerValidity-time.Hour)))
		g.Expect(certificateExpiry(g, db)).To(Equal(float64(renewed.NotAfter.Unix())))
		g.Expect(eventNotes(g, db)).To(ContainElement(And(ContainSubstring("Issued the server certificate"), ContainSubstring("it expires at"))))
	}, convergeTimeout, pollInterval).Should(Succeed())

	// The user's own authority replaces dbpilot's: the server certificate
	// follows it, and the authority is never written.
	own, err := pki.NewAuthority("the user's authority", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	authority.Data = map[string][]byte{layout.KeyCACert: own.CertPEM, layout.KeyCAKey: own.KeyPEM}
	g.Expect(k8sClient.Update(ctx, authority)).To(Succeed())
	written := authority.ResourceVersion
	g.Eventually(func(g Gomega) { serverCertificate(g, db, own.CertPEM) }, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) string { return authorityOf(g, db).ResourceVersion }, 3*time.Second, pollInterval).Should(Equal(written))

	// Paused, nothing is renewed, but the expiry metric still follows the
	// certificate the pods mount, for the alert to warn.
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Paused = true })
	g.Eventually(func(g Gomega) dbpilotv1alpha1.Phase { fetch(g, db); return db.Status.Phase }, convergeTimeout, pollInterval).
		Should(Equal(dbpilotv1alpha1.PhasePaused))
	soon, err := pki.IssueServer(own, db.ServerNames(), time.Now().Add(10*24*time.Hour-pki.ServerValidity))
	g.Expect(err).NotTo(HaveOccurred())
	setServerCertificate(g, db, soon)
	soonCert := serverCertificate(g, db, own.CertPEM)
	g.Eventually(func(g Gomega) float64 { return certificateExpiry(g, db) }, convergeTimeout, pollInterval).
		Should(Equal(float64(soonCert.NotAfter.Unix())))
	g.Consistently(func(g Gomega) time.Time { return serverCertificate(g, db, own.CertPEM).NotAfter }, 3*time.Second, pollInterval).
		Should(Equal(soonCert.NotAfter), "a paused Database's certificate is not renewed")
}

// TestOwnAuthorityBeforeTheDatabase creates the certificate authority's
// Secret before the Database, without dbpilot's labels: dbpilot signs the
// server certificate with it and leaves the Secret as it was.
func TestOwnAuthorityBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tls-own")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EngineMariaDB)
	own, err := pki.NewAuthority("the user's authority", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.CertificateAuthoritySecretName()},
		Data: map[string][]byte{layout.KeyCACert: own.CertPEM, layout.KeyCAKey: own.KeyPEM}}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	serverCertificate(g, db, own.CertPEM)
	kept := authorityOf(g, db)
	g.Expect(kept.ResourceVersion).To(Equal(secret.ResourceVersion), "the user's Secret is never written")
	g.Expect(kept.OwnerReferences).To(BeEmpty())
}

func setServerCertificate(g Gomega, db *dbpilotv1alpha1.Database, pair pki.KeyPair) {
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, secret)).To(Succeed())
	secret.Data[layout.KeyTLSCert], secret.Data[layout.KeyTLSKey] = pair.CertPEM, pair.KeyPEM
	g.Expect(k8sClient.Update(context.Background(), secret)).To(Succeed())
}

// TestProvidedServerCertificate names a Secret of the user's, as
// cert-manager writes it, for the server certificate: while it is missing,
// lacks ca.crt (an ACME issuer's) or carries too few names the Database is
// Degraded naming the field (and the names) and nothing is copied; then
// its certificate is copied where the pods take it, and so is its renewal;
// deleting it keeps the copy; dbpilot creates no authority of its own and
// never writes the user's Secret. Without the field, dbpilot issues its own
// again.
func TestProvidedServerCertificate(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tls-provided")
	startOperator(t, ns)

	db := newDatabase(ns, "billing", dbpilotv1alpha1.EnginePostgres)
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{ServerCertificateSecretName: "billing-cert"}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	expectCertificateProblem(g, db, "spec.tls.serverCertificateSecretName: Secret billing-cert does not exist")
	expectNoServerCertificate(g, db)
	g.Expect(certificateExpirySeries(g, db)).To(BeZero(), "no expiry series while no certificate is served")

	// An ACME issuer's Secret: no ca.crt.
	ca, err := pki.NewAuthority("the user's issuer", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	few, err := pki.IssueServer(ca, []string{db.ServiceHost(db.ReadWriteServiceName())}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	provided := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "billing-cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{layout.KeyTLSCert: few.CertPEM, layout.KeyTLSKey: few.KeyPEM}}
	g.Expect(k8sClient.Create(ctx, provided)).To(Succeed())
	expectCertificateProblem(g, db, "spec.tls.serverCertificateSecretName: Secret billing-cert lacks the keys ca.crt")

	// Then with it, but without the pods' names.
	provided.Data[layout.KeyCACert] = ca.CertPEM
	g.Expect(k8sClient.Update(ctx, provided)).To(Succeed())
	expectCertificateProblem(g, db, "spec.tls.serverCertificateSecretName: Secret billing-cert: the certificate does not carry the names",
		"*."+db.ServiceHost(db.HeadlessServiceName()))
	expectNoServerCertificate(g, db)

	// Every name: it is copied, and the Database converges.
	full, err := pki.IssueServer(ca, db.ServerNames(), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	provided.Data[layout.KeyTLSCert], provided.Data[layout.KeyTLSKey] = full.CertPEM, full.KeyPEM
	g.Expect(k8sClient.Update(ctx, provided)).To(Succeed())
	waitConverged(g, db)
	served := serverCertificate(g, db, ca.CertPEM)
	g.Expect(served.Raw).To(Equal(pemBytes(g, full.CertPEM)))
	g.Expect(certificateExpiry(g, db)).To(Equal(float64(served.NotAfter.Unix())))
	g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	err = k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.CertificateAuthoritySecretName()}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no authority of dbpilot's beside the user's: %v", err)

	// cert-manager renews it (issued an hour apart, so it expires at
	// another second): the copy follows, and says so.
	renewed, err := pki.IssueServer(ca, db.ServerNames(), time.Now().Add(-time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	provided.Data[layout.KeyTLSCert], provided.Data[layout.KeyTLSKey] = renewed.CertPEM, renewed.KeyPEM
	g.Expect(k8sClient.Update(ctx, provided)).To(Succeed())
	written := provided.ResourceVersion
	g.Eventually(func(g Gomega) {
		copied := serverCertificate(g, db, ca.CertPEM)
		g.Expect(copied.Raw).To(Equal(pemBytes(g, renewed.CertPEM)))
		g.Expect(certificateExpiry(g, db)).To(Equal(float64(copied.NotAfter.Unix())))
		g.Expect(eventNotes(g, db)).To(ContainElement("Copied the server certificate of Secret billing-cert into Secret billing-tls"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) string {
		fetch(g, provided)
		return provided.ResourceVersion
	}, 3*time.Second, pollInterval).Should(Equal(written), "the user's Secret is never written")

	// Its issuer renewed with its key, name and key identifier: the pods
	// trust the renewed copy in place of the former at once, and serve
	// the same certificate.
	ca.CertPEM = sameKeyAuthority(g, ca, time.Now().Add(pki.AuthorityValidity))
	fetch(g, provided)
	provided.Data[layout.KeyCACert] = ca.CertPEM
	g.Expect(k8sClient.Update(ctx, provided)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(serverCertificate(g, db, ca.CertPEM).Raw).To(Equal(pemBytes(g, renewed.CertPEM)))
		g.Expect(eventNotes(g, db)).To(ContainElement(
			"Secret billing-tls trusts the renewed copy of its certificate's authority in place of the former one: the certificate it serves verifies with either"))
	}, convergeTimeout, pollInterval).Should(Succeed())

	// The user's Secret deleted: the pods keep the copy they serve.
	g.Expect(k8sClient.Delete(ctx, provided)).To(Succeed())
	expectCertificateProblem(g, db, "spec.tls.serverCertificateSecretName: Secret billing-cert does not exist")
	kept := serverCertificate(g, db, ca.CertPEM)
	g.Expect(kept.Raw).To(Equal(pemBytes(g, renewed.CertPEM)))
	g.Expect(certificateExpiry(g, db)).To(Equal(float64(kept.NotAfter.Unix())), "the expiry of the copy the pods still serve")

	// Back to dbpilot's own: an authority, and a certificate it signed,
	// staged: its authority trusted beside the user's first, the user's
	// dropped once the pods serve the new certificate (kwok's pods report
	// no mounted files, so no step waits here; the real node's test
	// waits).
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.TLS = nil })
	g.Eventually(func(g Gomega) {
		authority := authorityOf(g, db).Data[layout.KeyCACert]
		serverCertificate(g, db, authority)
		tlsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.ServerCertificateSecretName()}}
		fetch(g, tlsSecret)
		g.Expect(tlsSecret.Data[layout.KeyCACert]).To(Equal(authority), "only dbpilot's authority trusted in the end")
		g.Expect(eventNotes(g, db)).To(ContainElements(
			"Secret billing-tls trusts the new certificate's authorities beside the former ones; the certificate follows once every pod has them",
			"Issued the server certificate in Secret billing-tls again: the certificate authority did not sign it",
			"Every pod serves the certificate in Secret billing-tls: it trusts only that certificate's authorities now"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	waitConverged(g, db)
}

// TestSwitchToProvidedCertificateOnceValid moves a running Database from
// dbpilot's certificate to the user's, whose validity starts beyond the
// clock skew allowed: dbpilot's stays in place meanwhile, Degraded says
// when the user's is valid from, and dbpilot copies it then on its own,
// with no change to either object (its recheck is not dropped by the
// problem).
func TestSwitchToProvidedCertificateOnceValid(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tls-switch")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EngineMariaDB)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	own := serverCertificate(g, db, authorityOf(g, db).Data[layout.KeyCACert])

	ca, err := pki.NewAuthority("the user's issuer", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	// Issued 5 minutes back-dated: valid 40 s after the skew allowed,
	// time enough for the problem to be seen on a busy machine.
	soon, err := pki.IssueServer(ca, db.ServerNames(), time.Now().Add(5*time.Minute+pki.ClockSkew+40*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := x509.ParseCertificate(pemBytes(g, soon.CertPEM))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(leaf.NotBefore).To(BeTemporally(">", time.Now().Add(pki.ClockSkew)), "the certificate is not valid yet, even with the skew")
	provided := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger-cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{layout.KeyTLSCert: soon.CertPEM, layout.KeyTLSKey: soon.KeyPEM, layout.KeyCACert: ca.CertPEM}}
	g.Expect(k8sClient.Create(ctx, provided)).To(Succeed())
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{ServerCertificateSecretName: "ledger-cert"}
	})
	expectCertificateProblem(g, db, "spec.tls.serverCertificateSecretName: Secret ledger-cert: the certificate is valid only from "+leaf.NotBefore.UTC().Format(time.RFC3339))
	g.Expect(serverCertificate(g, db, authorityOf(g, db).Data[layout.KeyCACert]).Raw).To(Equal(own.Raw), "the pods keep dbpilot's meanwhile")

	// Copied once valid give or take the skew: it verifies only later.
	g.Eventually(func(g Gomega) {
		served := &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ServerCertificateSecretName()}, served)).To(Succeed())
		// Beside the user's files, the client authority the engines trust.
		wanted := maps.Clone(provided.Data)
		wanted[layout.KeyClientCACert] = clientAuthorityOf(g, db).Data[layout.KeyCACert]
		g.Expect(served.Data).To(Equal(wanted))
		g.Expect(eventNotes(g, db)).To(ContainElement("Copied the server certificate of Secret ledger-cert into Secret ledger-tls"))
	}, 90*time.Second, pollInterval).Should(Succeed())
	waitConverged(g, db)
	g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
}

// expectCertificateProblem waits until the Database is Degraded for its
// server certificate with a message holding every text.
func expectCertificateProblem(g Gomega, db *dbpilotv1alpha1.Database, texts ...string) {
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonServerCertificateInvalid))
		for _, text := range texts {
			g.Expect(degraded.Message).To(ContainSubstring(text))
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
}

// expectNoServerCertificate expects nothing copied into the Secret the
// pods mount.
func expectNoServerCertificate(g Gomega, db *dbpilotv1alpha1.Database) {
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing copied while the certificate is unusable: %v", err)
}

// certificateExpiry reads dbpilot_server_certificate_expiry_timestamp_seconds
// of the Database; 0 when absent.
func certificateExpiry(g Gomega, db *dbpilotv1alpha1.Database) float64 {
	return gathered(g, "dbpilot_server_certificate_expiry_timestamp_seconds", map[string]string{"namespace": db.Namespace, "database": db.Name})
}

// certificateExpirySeries counts the Database's series of
// dbpilot_server_certificate_expiry_timestamp_seconds.
func certificateExpirySeries(g Gomega, db *dbpilotv1alpha1.Database) int {
	return len(gatheredSeries(g, "dbpilot_server_certificate_expiry_timestamp_seconds", map[string]string{"namespace": db.Namespace, "database": db.Name}))
}

// pemBytes decodes one PEM block.
func pemBytes(g Gomega, data []byte) []byte {
	block, _ := pem.Decode(data)
	g.Expect(block).NotTo(BeNil())
	return block.Bytes
}
