package realnode_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
	"github.com/dbpilot/dbpilot/internal/pki/pkitest"
)

// TestOwnAuthoritiesRenewedWhileClientsConnect gives a running Database's
// own authorities, the server's and the client certificates', copies that
// expire in 100 days, as they will in their tenth year, while two clients
// open a session to its pod every quarter second, each presenting the
// application user's certificate: one keeps the authority and the
// certificate it took before, one reads them from the Secrets as it
// connects. dbpilot renews both authorities with their keys; neither
// client is ever refused, the pod's engine verifies with the renewed
// copies (its instance program reports them taken) and still accepts the
// certificate issued before, which is not issued again, nor is the server
// certificate; no pod restarts. A certificate from an authority of the
// same name and another key is refused: the engine verifies by key.
func TestOwnAuthoritiesRenewedWhileClientsConnect(t *testing.T) {
	for _, tc := range nodeEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			besideOtherTests(t, 500) // one small pod
			testOwnAuthoritiesRenewed(t, tc.engine, tc.version)
		})
	}
}

func testOwnAuthoritiesRenewed(t *testing.T, engine dbpilotv1alpha1.Engine, version string) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-renewal-" + string(engine)
	restrictedNamespace(t, ns)
	db := newDatabase(ns, "orders", engine, version, 1)
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true, ClientCertificateRequired: true}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitAvailable(g, db, 3*time.Minute)

	secrets := clientset.CoreV1().Secrets(ns)
	get := func(g Gomega, name string) map[string][]byte {
		secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return secret.Data
	}
	credentials := get(g, db.CredentialsSecretName())
	user, password := string(credentials[desired.SecretKeyUsername]), string(credentials[desired.SecretKeyPassword])
	var application map[string][]byte
	g.Eventually(func(g Gomega) {
		application = get(g, db.ApplicationCertificateSecretName())
		g.Expect(get(g, db.ServerCertificateSecretName())[layout.KeyClientCACert]).To(Equal(application[layout.KeyCACert]))
	}, time.Minute, time.Second).Should(Succeed())
	issued, err := tls.X509KeyPair(application[layout.KeyTLSCert], application[layout.KeyTLSKey])
	g.Expect(err).NotTo(HaveOccurred())
	formerServerAuthority := get(g, db.CertificateAuthoritySecretName())[layout.KeyCACert]
	served := get(g, db.ServerCertificateSecretName())[layout.KeyTLSCert]
	at, err := podEndpoint(ctx, db, db.PodName(0))
	g.Expect(err).NotTo(HaveOccurred())
	kept := &tls.Config{RootCAs: pool(g, formerServerAuthority), ServerName: at.serverName, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{issued}}
	restarts := podRestarts(g, db)

	probe := startProbe(func(ctx context.Context) map[string]error {
		return map[string]error{
			"kept":      sessionError(connectOver(ctx, db, at, user, password, kept.Clone())),
			"following": sessionError(connectAppAt(ctx, db, at)),
		}
	})
	defer probe.stop()
	probe.waitRounds(g, 4) // sessions before

	// Their tenth year: copies of each, with its key, that expire in 100
	// days.
	start := time.Now()
	for _, name := range []string{db.CertificateAuthoritySecretName(), db.ClientAuthoritySecretName()} {
		g.Eventually(func() error {
			secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			expiring, err := pkitest.ExpiringCopy(secret.Data[layout.KeyCACert], secret.Data[layout.KeyCAKey], start.Add(100*24*time.Hour))
			g.Expect(err).NotTo(HaveOccurred())
			secret.Data[layout.KeyCACert] = expiring
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
			return err
		}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	}

	// Renewed for 10 years; the pods' Secret trusts the renewed copies
	// alone and serves the same certificate; <name>-app-tls keeps its
	// certificate; the pod's engine took them all.
	var serverAuthority, clientAuthority []byte
	g.Eventually(func(g Gomega) {
		serverAuthority = get(g, db.CertificateAuthoritySecretName())[layout.KeyCACert]
		clientAuthority = get(g, db.ClientAuthoritySecretName())[layout.KeyCACert]
		for _, authority := range [][]byte{serverAuthority, clientAuthority} {
			g.Expect(leaf(g, authority).NotAfter).To(BeTemporally(">", time.Now().Add(9*365*24*time.Hour)), "renewed")
		}
		pods := get(g, db.ServerCertificateSecretName())
		g.Expect(pods[layout.KeyCACert]).To(Equal(serverAuthority))
		g.Expect(pods[layout.KeyClientCACert]).To(Equal(clientAuthority))
		g.Expect(pods[layout.KeyTLSCert]).To(Equal(served), "the server certificate is not issued again")
		current := get(g, db.ApplicationCertificateSecretName())
		g.Expect(current[layout.KeyTLSCert]).To(Equal(application[layout.KeyTLSCert]), "the application user's certificate is not issued again")
		g.Expect(current[layout.KeyCACert]).To(Equal(clientAuthority))
		report, err := certificateReport(ctx, at, serverAuthority)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(report).To(Equal(layout.CertificateStatus{
			MountedCertificate: layout.FileDigest(served), MountedAuthorities: layout.FileDigest(serverAuthority),
			ServedCertificate: layout.FileDigest(served), ClientAuthorities: layout.FileDigest(clientAuthority),
		}), "the pod's engine verifies with the renewed client authority")
	}, 3*time.Minute, time.Second).Should(Succeed())
	t.Logf("%s: both authorities renewed and taken by the pod's engine %.1fs after their copies were put in their last year", engine, time.Since(start).Seconds())
	probe.waitRounds(g, 8) // sessions with the renewed copies taken
	sessions, refused := probe.stop()
	t.Logf("%s: sessions across the renewal: %v, refused: %d", engine, sessions, len(refused))
	g.Expect(refused).To(BeEmpty(), "sessions refused across the renewal")
	for _, client := range []string{"kept", "following"} {
		g.Expect(sessions[client]).To(BeNumerically(">=", 12), "the %s client kept connecting", client)
	}

	// The renewed copy alone verifies the server; and the engine verifies
	// by key: an authority of the same name and another key signs nothing
	// it accepts.
	renewedOnly := kept.Clone()
	renewedOnly.RootCAs = pool(g, serverAuthority)
	g.Expect(sessionError(connectOver(ctx, db, at, user, password, renewedOnly))).To(Succeed())
	impostor, err := pki.NewAuthority(leaf(g, clientAuthority).Subject.CommonName, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	foreign, err := pki.IssueClient(impostor, user, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	foreignPair, err := tls.X509KeyPair(foreign.CertPEM, foreign.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sessionError(connectPresenting(ctx, db, at, user, password, &foreignPair))).To(HaveOccurred(),
		"a certificate from an authority of the client authority's name and another key")

	g.Expect(podRestarts(g, db)).To(Equal(restarts), "no pod restarted for the renewal")
	for _, reason := range []string{dbpilotv1alpha1.EventReasonCertificateAuthorityRenewed, dbpilotv1alpha1.EventReasonClientCertificateAuthorityRenewed} {
		g.Expect(eventsOf(g, ns, reason)).NotTo(BeEmpty(), "an Event %s", reason)
	}
	for _, reason := range []string{dbpilotv1alpha1.EventReasonClientCertificateIssued, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut} {
		g.Expect(eventsOf(g, ns, reason)).To(BeEmpty(), "no Event %s", reason)
	}
}

// sessionError runs SELECT 1 in a session just opened and closes it: the
// first error of the two.
func sessionError(session sqlSession, err error) error {
	if err != nil {
		return err
	}
	defer session.close()
	_, err = session.queryInt(context.Background(), "SELECT 1")
	return err
}

// pool is a certificate pool of the authorities in a PEM bundle.
func pool(g Gomega, authorities []byte) *x509.CertPool {
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(authorities)).To(BeTrue())
	return roots
}

// leaf parses the first certificate of a PEM bundle.
func leaf(g Gomega, bundle []byte) *x509.Certificate {
	block, _ := pem.Decode(bundle)
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// certificateReport reads the certificate report of the instance program
// at the endpoint's address, its certificate verified against authorities.
func certificateReport(ctx context.Context, at endpoint, authorities []byte) (layout.CertificateStatus, error) {
	var report layout.CertificateStatus
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(authorities) {
		return report, fmt.Errorf("no authority to verify the instance program with")
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: at.serverName, MinVersion: tls.VersionTLS12}}}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(at.address, strconv.Itoa(layout.ProbePort))+layout.CertificatesPath, nil)
	if err != nil {
		return report, err
	}
	resp, err := client.Do(request)
	if err != nil {
		return report, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return report, fmt.Errorf("%s: %s", layout.CertificatesPath, resp.Status)
	}
	return report, json.NewDecoder(resp.Body).Decode(&report)
}

// sessionProbe runs a round of sessions every quarter second until it is
// stopped, counting each client's sessions and keeping every refusal.
type sessionProbe struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	rounds   int
	sessions map[string]int
	refused  []string
}

// startProbe starts a sessionProbe of round, which opens one session per
// client and returns each one's error.
func startProbe(round func(context.Context) map[string]error) *sessionProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &sessionProbe{cancel: cancel, done: make(chan struct{}), sessions: map[string]int{}}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			errs := round(ctx)
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.rounds++
			for client, err := range errs {
				p.sessions[client]++
				if err != nil {
					p.refused = append(p.refused, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), client, err))
				}
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return p
}

// waitRounds waits for n more rounds.
func (p *sessionProbe) waitRounds(g Gomega, n int) {
	p.mu.Lock()
	want := p.rounds + n
	p.mu.Unlock()
	g.Eventually(func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.rounds
	}, time.Minute, 100*time.Millisecond).Should(BeNumerically(">=", want))
}

// stop ends the probe (again: no harm) and returns what it counted.
func (p *sessionProbe) stop() (sessions map[string]int, refused []string) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions, p.refused
}
