package realnode_test

import (
	"context"
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
// refused (401), and the pod is not fenced.
func expectActionsRefused(g Gomega, target, other *dbpilotv1alpha1.Database) {
	ctx := context.Background()
	pod, err := clientset.CoreV1().Pods(target.Namespace).Get(ctx, target.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(other.Namespace).Get(ctx, other.ReplicationSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	othersToken := string(secret.Data[layout.KeyReplicationPassword])
	g.Expect(othersToken).NotTo(BeEmpty())
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(layout.ProbePort)) + layout.FencePath
	for who, token := range map[string]string{"no token": "", other.Name + "'s token": othersToken} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "%s fencing %s with %s", other.Name, pod.Name, who)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(layout.ProbePort)) + layout.StatusPath)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var status layout.InstanceStatus
	g.Expect(json.NewDecoder(resp.Body).Decode(&status)).To(Succeed())
	g.Expect(status.Fenced).To(BeFalse(), "%s is not fenced", pod.Name)
}
