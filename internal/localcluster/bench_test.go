package localcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// BenchmarkControlPlane reports how long the local control plane takes to
// start (until nodes are Ready) and how long a 3-replica StatefulSet with
// volume claims takes to become Ready on it. `make bench-controlplane`.
func BenchmarkControlPlane(b *testing.B) {
	var startTotal, readyTotal time.Duration
	for i := range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		began := time.Now()
		c, err := localcluster.Start(ctx, localcluster.Config{})
		if err != nil {
			cancel()
			b.Fatalf("starting control plane: %v", err)
		}
		started := time.Since(began)
		clientset, err := kubernetes.NewForConfig(c.RESTConfig)
		if err != nil {
			b.Fatal(err)
		}
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := clientset.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		created := time.Now()
		if _, err := clientset.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "web", 3), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			sts, err := clientset.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err == nil && sts.Status.ReadyReplicas == 3 {
				break
			}
			if ctx.Err() != nil {
				b.Fatal("StatefulSet never became Ready")
			}
			time.Sleep(20 * time.Millisecond)
		}
		ready := time.Since(created)
		cancel()
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
		startTotal += started
		readyTotal += ready
		b.Logf("run %d: control plane started in %.2fs, 3-replica StatefulSet Ready in %.2fs", i+1, started.Seconds(), ready.Seconds())
	}
	b.ReportMetric(startTotal.Seconds()/float64(b.N), "start-s/op")
	b.ReportMetric(readyTotal.Seconds()/float64(b.N), "sts-ready-s/op")
}
