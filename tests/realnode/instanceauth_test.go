package realnode_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// expectActionsRefused calls the fence endpoint of target's first pod over
// the bridge, as another pod could: without a token, and with the token
// other's instance programs take (its replication password). Both are
// refused (401), and the pod is not fenced. The instance program serves
// HTTPS with target's server certificate, which verifies against its
// authority, and answers nothing over plain HTTP, where a token would
// travel in clear.
func expectActionsRefused(g Gomega, target, other *dbpilotv1alpha1.Database) {
	ctx := context.Background()
	pod, err := clientset.CoreV1().Pods(target.Namespace).Get(ctx, target.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(other.Namespace).Get(ctx, other.ReplicationSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	othersToken := string(secret.Data[layout.KeyReplicationPassword])
	g.Expect(othersToken).NotTo(BeEmpty())
	certificate, err := clientset.CoreV1().Secrets(target.Namespace).Get(ctx, target.ServerCertificateSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(certificate.Data[layout.KeyCACert])).To(BeTrue())
	verifying := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: target.ServiceHost(target.HeadlessServiceName())}}}
	address := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(layout.ProbePort))
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + address + layout.StatusPath); err == nil {
		resp.Body.Close()
		g.Expect(resp.StatusCode).NotTo(Equal(http.StatusOK), "the instance program answers over plain HTTP")
	}
	url := "https://" + address + layout.FencePath
	for who, token := range map[string]string{"no token": "", other.Name + "'s token": othersToken} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := verifying.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "%s fencing %s with %s", other.Name, pod.Name, who)
	}
	resp, err := verifying.Get("https://" + address + layout.StatusPath)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var status layout.InstanceStatus
	g.Expect(json.NewDecoder(resp.Body).Decode(&status)).To(Succeed())
	g.Expect(status.Fenced).To(BeFalse(), "%s is not fenced", pod.Name)
}
