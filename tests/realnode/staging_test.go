package realnode_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestCertificateStagingGoesOnWithoutPodsThatDoNotMount moves a running
// PostgreSQL Database to the platform team's certificate while the node's
// kubelet is frozen (SIGSTOP): the pods keep answering, but their mounted
// files stay as they were, so the step that serves the certificate waits
// the operator's stage timeout for them, then a Warning names them and the
// change goes on. The kubelet back, every pod serves the user's
// certificate and the former authority is retired, with no pod restarted.
func TestCertificateStagingGoesOnWithoutPodsThatDoNotMount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-staging-timeout"
	restrictedNamespace(t, ns)
	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres, "15", 2)
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitReadyPods(g, db, 2)
	expectInstances(g, db, 2)
	before := podRestarts(g, db)
	createProvidedCertificate(g, db, "orders-cert")

	kubelet, err := cluster.PID("kubelet")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(kubelet, syscall.SIGSTOP)).To(Succeed())
	var once sync.Once
	resume := func() { once.Do(func() { _ = syscall.Kill(kubelet, syscall.SIGCONT) }) }
	// Before the Database's deletion (cleanups run last first); and never
	// frozen for longer than the step should wait plus a margin.
	t.Cleanup(resume)
	time.AfterFunc(stageMountTimeout+20*time.Second, resume)
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.TLS.ServerCertificateSecretName = "orders-cert" })
	var added, timedOut time.Time
	g.Eventually(func(g Gomega) {
		added = eventTime(g, ns, dbpilotv1alpha1.EventReasonCertificateAuthorityAdded)
		timedOut = eventTime(g, ns, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut)
		g.Expect(added).NotTo(BeZero(), "the new root is trusted at once")
		g.Expect(timedOut).NotTo(BeZero(), "the step goes on without the pods")
	}, stageMountTimeout+15*time.Second, time.Second).Should(Succeed())
	resume()
	t.Logf("the kubelet frozen: the new root trusted, then the step waited %.0fs for the pods to mount it (timeout %s)",
		timedOut.Sub(added).Seconds(), stageMountTimeout)
	// (The step's time is kept to the second.)
	g.Expect(timedOut.Sub(added)).To(BeNumerically(">=", stageMountTimeout-2*time.Second), "the step waited for the pods")
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut)).To(Equal(fmt.Sprintf(
		"Pods orders-0, orders-1 did not report the authorities of Secret orders-tls taken %s after it was written: going on without them", stageMountTimeout)))

	// The kubelet back, the pods mount the Secret as it is now and serve
	// the user's certificate; the former authority goes once they do.
	waitServingProvidedCertificate(g, db, 2*time.Minute)
	waitFormerAuthorityRetired(g, db, "orders-cert")
	g.Eventually(func(g Gomega) string {
		return eventNote(g, ns, dbpilotv1alpha1.EventReasonCertificateAuthorityRetired)
	}, 30*time.Second, time.Second).Should(Equal("Every pod serves the certificate in Secret orders-tls: it trusts only that certificate's authorities now"),
		"the pods reported serving it once their kubelet was back")
	g.Expect(eventsOf(g, ns, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut)).To(ConsistOf(HaveField("Series", BeNil())),
		"only the step the frozen kubelet held went on without the pods")
	g.Expect(podRestarts(g, db)).To(Equal(before), "no pod restarted")
}

// eventTime is when the newest Event of reason in namespace happened;
// zero when there is none.
func eventTime(g Gomega, namespace, reason string) time.Time {
	var newest time.Time
	for _, e := range eventsOf(g, namespace, reason) {
		if e.EventTime.After(newest) {
			newest = e.EventTime.Time
		}
	}
	return newest
}

// eventsOf are the Events of reason in namespace (a repeated one is a
// single Event with a Series).
func eventsOf(g Gomega, namespace, reason string) []eventsv1.Event {
	events, err := clientset.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var of []eventsv1.Event
	for _, e := range events.Items {
		if e.Reason == reason {
			of = append(of, e)
		}
	}
	return of
}
