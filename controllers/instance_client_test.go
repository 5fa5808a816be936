package controllers

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/pki"
)

func TestInstanceTargetFollowsThePodsCertificate(t *testing.T) {
	db := &dbpilotv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	old := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.5"}}
	// As the cache holds it: metadata and status, no volumes.
	mounted, err := TransformPodForCache(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{desired.AnnotationInstanceTLS: "true"}},
		Spec:       corev1.PodSpec{Volumes: []corev1.Volume{{Name: "tls"}}}, Status: old.Status})
	if err != nil {
		t.Fatal(err)
	}
	if got := instanceTargetOf(db, nil, old).base; got != "http://10.0.0.5:8000" {
		t.Errorf("a pod without the certificate: %s", got)
	}
	target := instanceTargetOf(db, []byte("authority"), mounted.(*corev1.Pod))
	if target.base != "https://10.0.0.5:8000" || target.client == http.DefaultClient {
		t.Errorf("a pod with the certificate: %s", target.base)
	}
	if again := instanceTargetOf(db, []byte("authority"), mounted.(*corev1.Pod)); again.client != target.client {
		t.Error("a second target of the same Database does not reuse its client")
	}
	if renewed := instanceTargetOf(db, []byte("another authority"), mounted.(*corev1.Pod)); renewed.client == target.client {
		t.Error("a new authority keeps the old client")
	}
	instanceTransports.forget(types.NamespacedName{Namespace: "shop", Name: "orders"})
}

// TestInstanceClientVerifiesTheAuthority serves HTTPS with a certificate
// of the Database's authority: the Database's client reaches it; with
// another authority, or another Database's name, it does not.
func TestInstanceClientVerifiesTheAuthority(t *testing.T) {
	db := &dbpilotv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	authority, err := pki.NewAuthority("orders", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	served, err := pki.IssueServer(authority, db.ServerNames(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(served.CertPEM, served.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	server.StartTLS()
	defer server.Close()
	other, err := pki.NewAuthority("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		key        types.NamespacedName
		authority  []byte
		serverName string
		ok         bool
	}{
		{"its authority", types.NamespacedName{Namespace: "shop", Name: "orders"}, authority.CertPEM, db.ServiceHost(db.HeadlessServiceName()), true},
		{"another authority", types.NamespacedName{Namespace: "shop", Name: "other-authority"}, other.CertPEM, db.ServiceHost(db.HeadlessServiceName()), false},
		{"another Database's name", types.NamespacedName{Namespace: "shop", Name: "ledger"}, authority.CertPEM, "ledger-headless.shop.svc", false},
	}
	for _, c := range cases {
		client := instanceTransports.client(c.key, c.authority, c.serverName)
		resp, err := client.Get(server.URL)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: not refused for its certificate: %v", c.name, err)
		}
		instanceTransports.forget(c.key)
	}
}
