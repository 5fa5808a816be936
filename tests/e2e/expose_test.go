package e2e_test

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestExposeOutsideTheCluster publishes a Database's primary through a
// LoadBalancer Service and its replicas through a NodePort one, each with
// the engine's port alone (never the instance program's). A Service of the
// user's that has one's name is left alone and named in Degraded until it
// is gone; the server certificate carries spec.tls.serverAltNames (issued
// again when one is added); Services no longer asked for are deleted, and
// the in-cluster ones stay as they were.
func TestExposeOutsideTheCluster(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "expose")
	startOperator(t, ns)

	db := newDatabase(ns, "public", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Expose = &dbpilotv1alpha1.ExposeSpec{
		ReadWrite: &dbpilotv1alpha1.ExposedService{
			Type:                     corev1.ServiceTypeLoadBalancer,
			Annotations:              map[string]dbpilotv1alpha1.AnnotationValue{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
			LoadBalancerSourceRanges: []string{"203.0.113.0/24"},
		},
		ReadOnly: &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeNodePort},
	}
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{ServerAltNames: []string{"db.example.com"}}
	// The user's own Service, with the name the replicas' would have.
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.ReadOnlyExternalServiceName(), Labels: map[string]string{"owner": "user"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	g.Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())

	service := func(g Gomega, name string) *corev1.Service {
		s := &corev1.Service{}
		g.Expect(k8sClient.Get(ctx, keyOf(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}), s)).To(Succeed())
		return s
	}
	g.Eventually(func(g Gomega) {
		rw := service(g, db.ReadWriteExternalServiceName())
		g.Expect(rw.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		g.Expect(rw.Spec.Selector).To(Equal(map[string]string{dbpilotv1alpha1.LabelDatabase: db.Name, dbpilotv1alpha1.LabelRole: dbpilotv1alpha1.RolePrimary}))
		g.Expect(rw.Spec.Ports).To(HaveLen(1), "the engine's port alone")
		g.Expect(rw.Spec.Ports[0].Port).To(BeEquivalentTo(5432))
		g.Expect(rw.Spec.LoadBalancerSourceRanges).To(Equal([]string{"203.0.113.0/24"}))
		g.Expect(rw.Annotations).To(HaveKeyWithValue("service.beta.kubernetes.io/aws-load-balancer-internal", "true"))
		g.Expect(metav1.IsControlledBy(rw, db)).To(BeTrue(), "owned by the Database")

		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonServiceConflict))
		g.Expect(degraded.Message).To(ContainSubstring("Service " + db.ReadOnlyExternalServiceName() + " exists and is not this Database's"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		now := service(g, theirs.Name)
		g.Expect(now.ResourceVersion).To(Equal(theirs.ResourceVersion), "the user's Service is never written")
	}, 3*time.Second, pollInterval).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, theirs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ro := service(g, db.ReadOnlyExternalServiceName())
		g.Expect(ro.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
		g.Expect(ro.Spec.Selector).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RoleReplica))
		g.Expect(ro.Spec.Ports).To(HaveLen(1))
		g.Expect(ro.Spec.Ports[0].NodePort).NotTo(BeZero())
	}, convergeTimeout, pollInterval).Should(Succeed())
	waitConverged(g, db)

	// status.endpoints says where clients outside the cluster connect:
	// the node port the API server allocated, and the load balancer's
	// address once the cluster gives it one (the test plays the load
	// balancer controller kwok's cluster lacks).
	ro := service(g, db.ReadOnlyExternalServiceName())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Endpoints.ExternalReadOnly).To(Equal(&dbpilotv1alpha1.ExternalEndpoint{
			Service: ro.Name, Type: corev1.ServiceTypeNodePort, NodePort: ro.Spec.Ports[0].NodePort}))
		g.Expect(db.Status.Endpoints.ExternalReadWrite).NotTo(BeNil())
		g.Expect(db.Status.Endpoints.ExternalReadWrite.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		g.Expect(db.Status.Endpoints.ExternalReadWrite.Address).To(BeEmpty(), "no load balancer yet")
	}, convergeTimeout, pollInterval).Should(Succeed())
	balanced := service(g, db.ReadWriteExternalServiceName())
	balanced.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}
	g.Expect(k8sClient.Status().Update(ctx, balanced)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		fetch(g, db)
		g.Expect(db.Status.Endpoints.ExternalReadWrite).NotTo(BeNil())
		return db.Status.Endpoints.ExternalReadWrite.Address
	}, convergeTimeout, pollInterval).Should(Equal("203.0.113.10:5432"))
	g.Expect(kubectl(g, "get", "database", "--namespace", ns, db.Name, "-o", "jsonpath={.status.endpoints.externalReadWrite.address}")).To(Equal("203.0.113.10:5432"))

	// The certificate names the load balancer's name, and then its
	// address too, issued again by the same authority.
	authority := authorityOf(g, db).Data[layout.KeyCACert]
	verifies := func(g Gomega, name string) {
		cert := serverCertificate(g, db, authority)
		roots := x509.NewCertPool()
		g.Expect(roots.AppendCertsFromPEM(authority)).To(BeTrue())
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		g.Expect(err).NotTo(HaveOccurred(), "verifying for %s", name)
	}
	verifies(g, "db.example.com")
	update(g, db, func(d *dbpilotv1alpha1.Database) {
		d.Spec.TLS.ServerAltNames = append(d.Spec.TLS.ServerAltNames, "203.0.113.10")
	})
	g.Eventually(func(g Gomega) {
		verifies(g, "203.0.113.10")
		verifies(g, "db.example.com")
	}, convergeTimeout, pollInterval).Should(Succeed())

	// The replicas no longer exposed, the primary by a node port.
	update(g, db, func(d *dbpilotv1alpha1.Database) {
		d.Spec.Expose.ReadOnly = nil
		d.Spec.Expose.ReadWrite = &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeNodePort}
	})
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, keyOf(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.ReadOnlyExternalServiceName()}}), &corev1.Service{})
		g.Expect(isNotFound(err)).To(BeTrue(), "the replicas' Service is deleted: %v", err)
		rw := service(g, db.ReadWriteExternalServiceName())
		g.Expect(rw.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
		g.Expect(rw.Spec.LoadBalancerSourceRanges).To(BeEmpty())
		g.Expect(rw.Annotations).NotTo(HaveKey("service.beta.kubernetes.io/aws-load-balancer-internal"))
		fetch(g, db)
		g.Expect(db.Status.Endpoints.ExternalReadOnly).To(BeNil())
		g.Expect(db.Status.Endpoints.ExternalReadWrite).To(Equal(&dbpilotv1alpha1.ExternalEndpoint{
			Service: rw.Name, Type: corev1.ServiceTypeNodePort, NodePort: rw.Spec.Ports[0].NodePort}))
	}, convergeTimeout, pollInterval).Should(Succeed())

	update(g, db, func(d *dbpilotv1alpha1.Database) { d.Spec.Expose = nil })
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, keyOf(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.ReadWriteExternalServiceName()}}), &corev1.Service{})
		g.Expect(isNotFound(err)).To(BeTrue(), "the primary's Service is deleted: %v", err)
	}, convergeTimeout, pollInterval).Should(Succeed())
	rw := service(g, db.ReadWriteServiceName())
	g.Expect(rw.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP), "the in-cluster Service stays")
	waitConverged(g, db)
	g.Expect(db.Status.Endpoints.ExternalReadWrite).To(BeNil())
	g.Expect(db.Status.Endpoints.ReadWrite).To(Equal(db.ServiceHost(db.ReadWriteServiceName()) + ":5432"))
}
