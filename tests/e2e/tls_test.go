package e2e_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
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
