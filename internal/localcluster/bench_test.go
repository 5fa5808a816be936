package localcluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/localimages"
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

// BenchmarkRealNode reports the real node's cold start (the control plane
// with a real node, until the node is Ready) and a PostgreSQL 15 pod's time
// from create to Ready (initdb included), its image built from the
// machine's Debian packages and pulled from the local registry.
// `make bench-controlplane` runs it where the machine allows a real node.
func BenchmarkRealNode(b *testing.B) {
	if err := localcluster.RealNodeAvailable(); err != nil {
		b.Skipf("no real node on this machine: %v", err)
	}
	var startTotal, readyTotal time.Duration
	for i := range b.N {
		started, ready, err := realNodeRun(filepath.Join(mustRepoRoot(b), "bin", "images"))
		if err != nil {
			b.Fatal(err)
		}
		startTotal += started
		readyTotal += ready
		b.Logf("run %d: control plane with a real node started in %.2fs, PostgreSQL pod Ready in %.2fs", i+1, started.Seconds(), ready.Seconds())
	}
	b.ReportMetric(startTotal.Seconds()/float64(b.N), "realnode-start-s/op")
	b.ReportMetric(readyTotal.Seconds()/float64(b.N), "postgres-ready-s/op")
}

// realNodeRun starts a cluster with a real node, times a PostgreSQL pod to
// Ready, and stops the cluster whatever happens.
func realNodeRun(imageCache string) (started, ready time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{RealNode: true})
	if err != nil {
		return 0, 0, fmt.Errorf("starting control plane with a real node: %w", err)
	}
	defer func() {
		if stopErr := c.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	started = time.Since(began)
	img, err := localimages.Postgres15(imageCache)
	if err != nil {
		return 0, 0, err
	}
	if err := c.PushImage(ctx, localimages.PostgresImage, img); err != nil {
		return 0, 0, err
	}
	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return 0, 0, err
	}
	for {
		if _, err := clientset.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	created := time.Now()
	if _, err := clientset.CoreV1().Pods("default").Create(ctx, postgresPod(), metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	for {
		pod, err := clientset.CoreV1().Pods("default").Get(ctx, "postgres", metav1.GetOptions{})
		if err == nil && podReady(pod) {
			return started, time.Since(created), nil
		}
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("the PostgreSQL pod never became Ready (logs in %s)", c.LogDir())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// postgresPod runs initdb and PostgreSQL in a pod, Ready once pg_isready
// answers.
func postgresPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "postgres", Namespace: "default"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999)},
			Containers: []corev1.Container{{
				Name: "postgres", Image: localimages.PostgresImage, ImagePullPolicy: corev1.PullAlways,
				Command: []string{"sh", "-c", "initdb -D /tmp/pgdata -U postgres --auth=trust >/dev/null && exec postgres -D /tmp/pgdata -c listen_addresses=127.0.0.1 -k /tmp"},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-h", "127.0.0.1"}}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func mustRepoRoot(b *testing.B) string {
	root, err := localcluster.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	return root
}
