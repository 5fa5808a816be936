package realnode_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// TestExposedDatabaseReachedFromOutside exposes a PostgreSQL Database's
// primary through a NodePort Service and names the node's address in its
// server certificate (spec.tls.serverAltNames): a client outside the
// cluster (the host) reaches it at the node's address and port, verifies
// the server for that address (verify-full), and its rows are the ones the
// in-cluster -rw Service serves. The pod runs under spec.scheduling (a
// node selector and a required anti-affinity, which the real kubelet
// admits) with spec.podMetadata's label.
func TestExposedDatabaseReachedFromOutside(t *testing.T) {
	besideOtherTests(t, 500) // one small pod
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-expose"
	restrictedNamespace(t, ns)
	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres, "15", 1)
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true, ServerAltNames: []string{localcluster.BridgeIP}}
	db.Spec.Expose = &dbpilotv1alpha1.ExposeSpec{ReadWrite: &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeNodePort}}
	db.Spec.Scheduling = &dbpilotv1alpha1.SchedulingSpec{
		NodeSelector:    map[string]dbpilotv1alpha1.LabelValue{corev1.LabelHostname: "dbpilot-node"},
		PodAntiAffinity: &dbpilotv1alpha1.PodAntiAffinitySpec{Type: dbpilotv1alpha1.PodAntiAffinityRequired, TopologyKey: corev1.LabelHostname},
	}
	db.Spec.PodMetadata = &dbpilotv1alpha1.PodMetadata{Labels: map[string]dbpilotv1alpha1.LabelValue{"team": "orders"}}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitAvailable(g, db, 3*time.Minute)
	pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Labels).To(HaveKeyWithValue("team", "orders"))

	service, err := clientset.CoreV1().Services(ns).Get(ctx, db.ReadWriteExternalServiceName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(service.Spec.Ports).To(HaveLen(1))
	outside := endpoint{localcluster.BridgeIP, int(service.Spec.Ports[0].NodePort), localcluster.BridgeIP}
	var session sqlSession
	began := time.Now()
	g.Eventually(func() (err error) {
		session, err = connectAppAt(ctx, db, outside)
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "the application user connects at the node's address and port, verifying the server for that address")
	t.Logf("first session at %s:%d %.1fs after Available", outside.address, outside.port, time.Since(began).Seconds())
	defer session.close()
	g.Expect(session.queryInt(ctx, encryptedQuery(db.Spec.Engine))).To(Equal(1), "the session is over TLS")
	g.Expect(session.exec(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)")).To(Succeed())
	g.Expect(session.exec(ctx, "INSERT INTO orders SELECT generate_series(1, 100)")).To(Succeed())

	// kube-proxy programs each Service on its own, about a second after
	// its endpoint turns ready.
	var inside sqlSession
	g.Eventually(func() (err error) {
		inside, err = connectApp(ctx, db)
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "the application user connects through -rw")
	defer inside.close()
	g.Expect(inside.queryInt(ctx, "SELECT SUM(id) FROM orders")).To(Equal(5050), "the rows written from outside, read through -rw")

	// The certificate names the node's address: verifying it for another
	// name fails.
	_, err = connectAppAt(ctx, db, endpoint{outside.address, outside.port, "elsewhere.example.com"})
	g.Expect(err).To(HaveOccurred(), "a client verifying the server for a name it does not carry is refused")
}
