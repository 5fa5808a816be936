package realnode_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	metricsService     = "dbpilot-controller-manager-metrics-service"
	metricsReaderRole  = "dbpilot-metrics-reader"
	metricsScraperName = "metrics-scraper"
)

// operatorMetrics scrapes the metrics endpoint of the operator OLM runs in
// operatorNS, through its Service, as Prometheus would: over HTTPS with a
// ServiceAccount token bound to the bundle's metrics-reader role. With
// token "", it returns the status code of an unauthenticated scrape.
type operatorMetrics struct {
	url   string
	token string
}

// newOperatorMetrics makes the scraper's ServiceAccount and binding (removed
// with cleanup) and a token for it.
func newOperatorMetrics(g Gomega, operatorNS string, cleanup func(func())) operatorMetrics {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: metricsScraperName}}
	_, err := clientset.CoreV1().ServiceAccounts(operatorNS).Create(ctx, sa, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: metricsScraperName + "-" + operatorNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNS, Name: metricsScraperName}},
	}
	_, err = clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	cleanup(func() {
		err := clientset.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Printf("removing the metrics scraper's binding: %v\n", err)
		}
	})
	token, err := clientset.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, metricsScraperName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	svc, err := clientset.CoreV1().Services(operatorNS).Get(ctx, metricsService, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/metrics"
	return operatorMetrics{url: url, token: token.Status.Token}
}

// scrapeClient trusts the operator's self-signed serving certificate, as a
// PodMonitor with insecureSkipVerify does.
var scrapeClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the operator's certificate is self-signed
}}

// get scrapes once with the given token.
func (m operatorMetrics) get(token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, m.url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// families scrapes and parses the exposition.
func (m operatorMetrics) families(g Gomega) map[string]*dto.MetricFamily {
	code, body, err := m.get(m.token)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// value is the value of the family's series with exactly these labels (a
// gauge's, a counter's or an untyped one's, or a histogram's count), or -1
// when absent.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	family, ok := families[name]
	if !ok {
		return -1
	}
	for _, metric := range family.GetMetric() {
		matched := 0
		for _, pair := range metric.GetLabel() {
			if want, ok := labels[pair.GetName()]; ok && want == pair.GetValue() {
				matched++
			}
		}
		if matched != len(labels) {
			continue
		}
		switch {
		case metric.Gauge != nil:
			return metric.GetGauge().GetValue()
		case metric.Counter != nil:
			return metric.GetCounter().GetValue()
		case metric.Histogram != nil:
			return float64(metric.GetHistogram().GetSampleCount())
		case metric.Untyped != nil:
			return metric.GetUntyped().GetValue()
		}
	}
	return -1
}
