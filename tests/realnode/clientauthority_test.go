package realnode_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// clientAuthorityOverlap is how long the suite's operator keeps a replaced
// client authority trusted after it issues the application user's
// certificate from the new one (5 minutes in a deployment).
const clientAuthorityOverlap = 20 * time.Second

// replaceClientAuthority replaces the Database's client authority with
// one of the user's while a client that reads <name>-app-tls as it
// connects (as one that mounts it does) opens a session to each of its
// pods every quarter second: none is refused, since the pods verify with
// the new authority before the certificate is issued from it, and the
// former authority stays trusted the overlap after. Once it is retired
// and the pods have taken that, the former certificate is refused by
// every pod.
func replaceClientAuthority(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, pods int) {
	ctx := context.Background()
	secrets := clientset.CoreV1().Secrets(db.Namespace)
	before, err := secrets.Get(ctx, db.ApplicationCertificateSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	former, err := tls.X509KeyPair(before.Data[layout.KeyTLSCert], before.Data[layout.KeyTLSKey])
	g.Expect(err).NotTo(HaveOccurred())

	restarts := podRestarts(g, db)
	var (
		mu       sync.Mutex
		refused  []string
		sessions int
	)
	probing, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for probing.Err() == nil {
			for i := range pods {
				pod := db.PodName(i)
				session, err := connectAppToPod(probing, db, pod)
				if err == nil {
					_, err = session.queryInt(probing, "SELECT 1")
					session.close()
				}
				if probing.Err() != nil {
					return
				}
				mu.Lock()
				sessions++
				if err != nil {
					refused = append(refused, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), pod, err))
				}
				mu.Unlock()
			}
			select {
			case <-probing.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	defer func() { stop(); <-done }()

	own, err := pki.NewAuthority("the platform team's client authority", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		authority, err := secrets.Get(ctx, db.ClientAuthoritySecretName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		authority.Data = map[string][]byte{layout.KeyCACert: own.CertPEM, layout.KeyCAKey: own.KeyPEM}
		_, err = secrets.Update(ctx, authority, metav1.UpdateOptions{})
		return err
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	start := time.Now()
	var issued time.Duration
	g.Eventually(func(g Gomega) {
		application, err := secrets.Get(ctx, db.ApplicationCertificateSecretName(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		if issued == 0 && string(application.Data[layout.KeyCACert]) == string(own.CertPEM) {
			issued = time.Since(start)
		}
		server, err := secrets.Get(ctx, db.ServerCertificateSecretName(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(server.Data[layout.KeyClientCACert]).To(Equal(own.CertPEM))
		g.Expect(application.Data[layout.KeyCACert]).To(Equal(own.CertPEM))
	}, 3*time.Minute, 250*time.Millisecond).Should(Succeed())
	t.Logf("%s: client authority replaced: the certificate issued from the new one after %.1fs, the former retired after %.1fs",
		db.Spec.Engine, issued.Seconds(), time.Since(start).Seconds())

	// The pods take the retired bundle: the former certificate is refused.
	credentials, err := secrets.Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	user, password := string(credentials.Data[desired.SecretKeyUsername]), string(credentials.Data[desired.SecretKeyPassword])
	g.Eventually(func(g Gomega) {
		for i := range pods {
			at, err := podEndpoint(ctx, db, db.PodName(i))
			g.Expect(err).NotTo(HaveOccurred())
			session, err := connectPresenting(ctx, db, at, user, password, &former)
			if err == nil {
				session.close()
			}
			g.Expect(err).To(HaveOccurred(), "pod %s with the former authority's certificate", db.PodName(i))
		}
	}, time.Minute, time.Second).Should(Succeed())
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%s: %d sessions with the certificate read as each connected, %d refused", db.Spec.Engine, sessions, len(refused))
	g.Expect(refused).To(BeEmpty(), "sessions refused while the client authority was replaced")
	g.Expect(sessions).To(BeNumerically(">", 20*pods), "the client kept connecting")
	for _, reason := range []string{dbpilotv1alpha1.EventReasonClientCertificateAuthorityTrusted, dbpilotv1alpha1.EventReasonClientCertificateIssued, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRetired} {
		g.Expect(eventsOf(g, db.Namespace, reason)).NotTo(BeEmpty(), "an Event %s", reason)
	}
	g.Expect(eventsOf(g, db.Namespace, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut)).To(BeEmpty(), "every pod reported verifying with both authorities in time")
	g.Expect(podRestarts(g, db)).To(Equal(restarts), "no pod restarted for the new client authority")
}
