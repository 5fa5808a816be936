package realnode_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// trustWatch checks, every second until stopped, every certificate a
// PostgreSQL Database's pods serve: its engine's (which the replicas verify
// for the read-write Service's name) against the authorities the pods'
// Secret holds at that moment (the operator's trust, and any client's
// that follows the Secret) and against the authorities each pod has
// mounted (each replica's trust, as its instance program reports them);
// its instance program's (which the operator verifies for the headless
// Service's name) against the Secret's.
type trustWatch struct {
	db *dbpilotv1alpha1.Database
	// client reads the instance programs' reports, one connection each.
	client   *http.Client
	done     chan struct{}
	result   chan trustResult
	finished *trustResult
}

// trustResult is what a trustWatch saw.
type trustResult struct {
	rounds, verified, failed int
	// failures are the first failures, with their times.
	failures []string
	// versions counts the authorities the Secret held, one after another.
	versions int
	// fewestPods is the fewest pods a round checked.
	fewestPods int
}

func watchTrust(db *dbpilotv1alpha1.Database) *trustWatch {
	w := &trustWatch{db: db, done: make(chan struct{}), result: make(chan trustResult, 1),
		client: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}}
	r := trustResult{fewestPods: -1}
	// Every version of the Secret's authorities, by digest: the pods
	// report theirs by digest.
	authorities := map[string][]byte{}
	last := ""
	round := func() {
		r.rounds++
		digest, pods, errs := w.check(authorities, &r.verified)
		if r.fewestPods < 0 || pods < r.fewestPods {
			r.fewestPods = pods
		}
		if digest != "" && digest != last {
			r.versions++
			last = digest
		}
		for _, err := range errs {
			r.failed++
			if len(r.failures) < 10 {
				r.failures = append(r.failures, time.Now().Format(time.TimeOnly)+" "+err.Error())
			}
		}
	}
	// The first round before it returns, so the Secret as it is before
	// the change is seen; the last when it is stopped, so is the Secret as
	// its caller last saw it.
	round()
	go func() {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-w.done:
				round()
				w.result <- r
				return
			case <-ticker.C:
				round()
			}
		}
	}()
	return w
}

// stop ends the watch (again: the same result) and returns what it saw.
func (w *trustWatch) stop() trustResult {
	if w.finished == nil {
		close(w.done)
		r := <-w.result
		w.finished = &r
	}
	return *w.finished
}

// servedChains are the certificates one pod serves.
type servedChains struct {
	engine, instance []*x509.Certificate
	report           layout.CertificateStatus
}

// check makes one round: it records the Secret's authorities, verifies
// every pod's served certificates, and returns the authorities' digest,
// how many pods it checked and what failed; verified counts the
// verifications.
func (w *trustWatch) check(authorities map[string][]byte, verified *int) (string, int, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db := w.db
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.ServerCertificateSecretName(), metav1.GetOptions{})
	if err != nil {
		return "", 0, []error{err}
	}
	trusted := secret.Data[layout.KeyCACert]
	digest := layout.FileDigest(trusted)
	authorities[digest] = trusted
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
	if err != nil {
		return digest, 0, []error{err}
	}
	served := map[string]servedChains{}
	var errs []error
	for _, pod := range pods.Items {
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
			continue
		}
		chains, err := podChains(ctx, w.client, pod.Status.PodIP)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", pod.Name, err))
			continue
		}
		served[pod.Name] = chains
	}
	rw, headless := db.ServiceHost(db.ReadWriteServiceName()), db.ServiceHost(db.HeadlessServiceName())
	for name, chains := range served {
		*verified += 2
		if err := verifyChain(chains.engine, trusted, rw); err != nil {
			errs = append(errs, fmt.Errorf("%s's engine, against the Secret's authorities: %w", name, err))
		}
		if err := verifyChain(chains.instance, trusted, headless); err != nil {
			errs = append(errs, fmt.Errorf("%s's instance program, against the Secret's authorities: %w", name, err))
		}
		for verifier, theirs := range served {
			mounted, ok := authorities[theirs.report.MountedAuthorities]
			*verified++
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s has mounted authorities the Secret never held (digest %q)", verifier, theirs.report.MountedAuthorities))
			default:
				if err := verifyChain(chains.engine, mounted, rw); err != nil {
					errs = append(errs, fmt.Errorf("%s's engine, against %s's mounted authorities: %w", name, verifier, err))
				}
			}
		}
	}
	return digest, len(served), errs
}

// podChains reads the certificates a PostgreSQL pod serves, without
// verifying them, and what its instance program reports mounted.
func podChains(ctx context.Context, client *http.Client, ip string) (servedChains, error) {
	var chains servedChains
	dialer := &net.Dialer{Timeout: 3 * time.Second}
	// The engine: PostgreSQL's SSLRequest, then the handshake.
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip, "5432"))
	if err != nil {
		return chains, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	request := make([]byte, 8)
	binary.BigEndian.PutUint32(request[0:4], 8)
	binary.BigEndian.PutUint32(request[4:8], 80877103)
	answer := make([]byte, 1)
	if _, err := conn.Write(request); err != nil {
		return chains, err
	}
	if _, err := conn.Read(answer); err != nil || answer[0] != 'S' {
		return chains, fmt.Errorf("the engine answered %q to a TLS request (%v)", answer, err)
	}
	engine := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	if err := engine.HandshakeContext(ctx); err != nil {
		return chains, err
	}
	chains.engine = engine.ConnectionState().PeerCertificates
	// The instance program: its certificate, and its report.
	resp, err := client.Get("https://" + net.JoinHostPort(ip, strconv.Itoa(layout.ProbePort)) + layout.CertificatesPath)
	if err != nil {
		return chains, err
	}
	defer resp.Body.Close()
	chains.instance = resp.TLS.PeerCertificates
	if resp.StatusCode != http.StatusOK {
		return chains, fmt.Errorf("%s: %s", layout.CertificatesPath, resp.Status)
	}
	return chains, json.NewDecoder(resp.Body).Decode(&chains.report)
}

// verifyChain verifies a served chain (the certificate, then its
// intermediates) for name against the authorities in a PEM bundle.
func verifyChain(chain []*x509.Certificate, authorities []byte, name string) error {
	if len(chain) == 0 {
		return fmt.Errorf("no certificate served")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(authorities) {
		return fmt.Errorf("no authority to verify with")
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, DNSName: name})
	return err
}
