package scale_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/managerprocess"
)

// steadyEnv sets how long the benchmark counts the operator's writes after
// convergence (default 2m).
const steadyEnv = "DBPILOT_SCALE_STEADY"

// managerArgsEnv adds flags to the manager's command line, to compare
// settings: DBPILOT_SCALE_MANAGER_ARGS="--max-concurrent-reconciles=8".
const managerArgsEnv = "DBPILOT_SCALE_MANAGER_ARGS"

// convergeTimeout bounds each run's wait for its end state.
const convergeTimeout = 30 * time.Minute

// BenchmarkScale creates N Databases at once under the manager binary and
// measures the time until all are Available, the manager's memory, CPU and
// API requests (from the API server's audit log, by its ServiceAccount),
// its writes in steady state and its reconcile durations; first, in the
// same cluster, a raw client creates the same children for N Databases
// with no operator, as the reference. Run with -benchtime 1x; the last
// line printed is the `scale` line.
func BenchmarkScale(b *testing.B) {
	ctx := context.Background()
	n := databaseCount
	steady, err := steadyWindow()
	if err != nil {
		b.Fatal(err)
	}
	operatorConfig, rawConfig, template := prepare(ctx, b)

	raw := runRaw(ctx, b, rawConfig, template, "raw", n)
	fmt.Printf("raw n=%d converge_s=%.1f rate_per_s=%.1f requests: %s\n", n, raw.seconds, float64(n)/raw.seconds, raw.requests)

	op := runOperator(ctx, b, operatorConfig, "db", n, steady)
	ratio := raw.seconds / op.seconds
	perDatabaseKiB := float64(op.peakKiB-op.idleKiB) / float64(n)
	fmt.Printf("operator n=%d converge_s=%.1f rate_per_s=%.1f cpu_s=%.1f idle_rss_mib=%.1f peak_rss_mib=%.1f steady_rss_mib=%.1f p50_reconcile_ms=%.0f p99_reconcile_ms=%.0f\n",
		n, op.seconds, float64(n)/op.seconds, op.cpuSeconds, mib(op.idleKiB), mib(op.peakKiB), mib(op.steadyKiB), op.p50*1000, op.p99*1000)
	fmt.Printf("operator memory: heap in use %.1f MiB idle, %.1f MiB in steady state (%.1f KiB per Database); RSS %.1f KiB per Database in steady state\n",
		mib(op.idleHeapKiB), mib(op.steadyHeapKiB), float64(op.steadyHeapKiB-op.idleHeapKiB)/float64(n), float64(op.steadyKiB-op.idleKiB)/float64(n))
	fmt.Printf("operator requests while converging: %s (%.1f writes per Database)\n", op.requests, float64(op.requests.writes())/float64(n))
	fmt.Printf("operator requests while converging, by resource: %s\n", op.requestTargets)
	fmt.Printf("operator requests in %s of steady state: %s\n", steady, op.steadyTargets)
	b.ReportMetric(op.seconds, "converge-s")
	b.ReportMetric(ratio, "ratio-vs-raw")
	fmt.Printf("scale n=%d converge_s=%.1f ratio_vs_raw=%.2f rss_mib=%.1f rss_per_db_kib=%.1f writes_per_min_steady=%.1f p99_reconcile_ms=%.0f\n",
		n, op.seconds, ratio, mib(op.peakKiB), perDatabaseKiB, float64(op.steadyRequests.writes())/steady.Minutes(), op.p99*1000)
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// prepare creates the operator's and the raw client's identities and
// returns their client configurations and the benchmark's defaulted
// Database.
func prepare(ctx context.Context, tb testing.TB) (operatorConfig, rawConfig *rest.Config, template *dbpilotv1alpha1.Database) {
	var err error
	if operatorConfig, err = boundAccount(ctx, operatorAccount); err != nil {
		tb.Fatal(err)
	}
	if rawConfig, err = boundAccount(ctx, rawAccount); err != nil {
		tb.Fatal(err)
	}
	if template, err = defaultedDatabase(ctx); err != nil {
		tb.Fatal(err)
	}
	return operatorConfig, rawConfig, template
}

// steadyWindow reads how long to watch the steady state.
func steadyWindow() (time.Duration, error) {
	value := os.Getenv(steadyEnv)
	if value == "" {
		return 2 * time.Minute, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 10*time.Second {
		return 0, fmt.Errorf("%s=%q: want a duration of at least 10s", steadyEnv, value)
	}
	return d, nil
}

// defaultedDatabase is the benchmark's Database, a one-pod PostgreSQL with
// a 1Gi volume, with the CRD's defaults filled in by a dry-run create.
func defaultedDatabase(ctx context.Context) (*dbpilotv1alpha1.Database, error) {
	db := &dbpilotv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: "template"},
		Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine:   dbpilotv1alpha1.EnginePostgres,
			Replicas: ptr.To[int32](1),
			Storage:  &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		},
	}
	if err := k8sClient.Create(ctx, db, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("defaulting the benchmark's Database: %w", err)
	}
	return db, nil
}

// unthrottled is cfg with client-side rate limiting off: full concurrency.
func unthrottled(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = -1, 0
	return out
}

// createNamespaces creates the namespaces of a run.
func createNamespaces(ctx context.Context, b testing.TB, names []string) {
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// rawResult is what the raw client's run measured.
type rawResult struct {
	seconds  float64
	requests requestCounts
	// requestTargets counts requests by verb and resource.
	requestTargets requestCounts
}

// runRaw creates, in namespaces named after prefix, the children of n Databases with the raw client and
// waits until every StatefulSet has its pod ready.
func runRaw(ctx context.Context, b testing.TB, cfg *rest.Config, template *dbpilotv1alpha1.Database, prefix string, n int) rawResult {
	createNamespaces(ctx, b, namespacesOf(prefix, n))
	cs, err := kubernetes.NewForConfig(unthrottled(cfg))
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := createRaw(ctx, cs, databasesLike(template, prefix, n)); err != nil {
		b.Fatal(err)
	}
	done := waitFor(b, "raw StatefulSets ready", n, func() (int, error) {
		ready := 0
		for _, ns := range namespacesOf(prefix, n) {
			list, err := clientset.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return 0, err
			}
			for _, sts := range list.Items {
				if sts.Spec.Replicas != nil && sts.Status.ReadyReplicas == *sts.Spec.Replicas && sts.Status.ObservedGeneration == sts.Generation {
					ready++
				}
			}
		}
		return ready, nil
	})
	requests, targets, err := countRequests(cluster.AuditLogPath(), serviceAccountUser(rawAccount), began, done)
	if err != nil {
		b.Fatal(err)
	}
	return rawResult{seconds: done.Sub(began).Seconds(), requests: requests, requestTargets: targets}
}

// stallTimeout fails a run whose count has not grown for this long: a
// pod that cannot be scheduled, a Database the operator forgot. It grows
// with the fleet: the operator takes every Database's first pass, in
// order, before it comes back to the first one whose pod is ready.
func stallTimeout(n int) time.Duration {
	return 3*time.Minute + time.Duration(n)*200*time.Millisecond
}

// waitFor polls count every second until it reaches want and returns when
// it did.
func waitFor(b testing.TB, what string, want int, count func() (int, error)) time.Time {
	deadline := time.Now().Add(convergeTimeout)
	best, progressed := 0, time.Now()
	for {
		got, err := count()
		if err == nil && got >= want {
			return time.Now()
		}
		if got > best {
			best, progressed = got, time.Now()
		}
		if time.Now().After(deadline) || time.Since(progressed) > stallTimeout(want) {
			b.Fatalf("%s: %d of %d, stuck since %s (last error: %v)", what, got, want, progressed.Format(time.TimeOnly), err)
		}
		time.Sleep(time.Second)
	}
}

// operatorResult is what the operator's run measured.
type operatorResult struct {
	seconds, cpuSeconds         float64
	idleKiB, peakKiB, steadyKiB int64
	// idleHeapKiB and steadyHeapKiB are the Go heap in use.
	idleHeapKiB, steadyHeapKiB int64
	p50, p99                   float64
	requests, steadyRequests   requestCounts
	// requestTargets and steadyTargets count requests by verb and
	// resource.
	requestTargets, steadyTargets requestCounts
}

// runOperator starts the manager binary as the operator's ServiceAccount,
// creates n Databases in namespaces named after prefix at once and waits until all are Available with their
// pod ready, then watches the steady state for steady.
func runOperator(ctx context.Context, b testing.TB, cfg *rest.Config, prefix string, n int, steady time.Duration) operatorResult {
	dir := b.TempDir()
	binary, err := managerprocess.Build(dir)
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		b.Fatal(err)
	}
	metricsAddress, probeAddress := freeAddress(b), freeAddress(b)
	args := []string{"--leader-elect=false", "--metrics-secure=false", "--metrics-bind-address=" + metricsAddress,
		"--health-probe-bind-address=" + probeAddress, "--zap-log-level=error"}
	if extra := os.Getenv(managerArgsEnv); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	manager := managerprocess.NewSlot("scale", binary, dir, args...)
	manager.Kubeconfig = kubeconfig
	if err := manager.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		manager.Kill()
		if b.Failed() {
			b.Log(manager.LogTail(50))
		}
	})
	waitReady(b, "http://"+probeAddress+"/readyz")
	// The caches are synced when the manager is ready; its footprint then
	// is the idle one.
	time.Sleep(5 * time.Second)
	pid := manager.PID()
	idleKiB, _, err := processMemory(pid)
	if err != nil {
		b.Fatal(err)
	}
	metricsURL := "http://" + metricsAddress + "/metrics"
	idleHeap := heapInUseKiB(b, metricsURL)
	cpuBefore, err := processCPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}

	createNamespaces(ctx, b, namespacesOf(prefix, n))
	creator, err := client.New(unthrottled(restConfig), client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := createDatabases(ctx, creator, prefix, n); err != nil {
		b.Fatal(err)
	}
	done := waitFor(b, "Databases Available", n, func() (int, error) {
		list := &dbpilotv1alpha1.DatabaseList{}
		if err := k8sClient.List(ctx, list); err != nil {
			return 0, err
		}
		available := 0
		for _, db := range list.Items {
			if meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable) && db.Status.ReadyReplicas == 1 {
				available++
			}
		}
		return available, nil
	})
	result := operatorResult{seconds: done.Sub(began).Seconds(), idleKiB: idleKiB}
	cpuAfter, err := processCPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	result.cpuSeconds = cpuAfter - cpuBefore
	families, err := scrape(metricsURL)
	if err != nil {
		b.Fatal(err)
	}
	buckets, err := reconcileBuckets(families)
	if err != nil {
		b.Fatal(err)
	}
	result.p50, result.p99 = quantile(0.5, buckets), quantile(0.99, buckets)

	// Steady state: whatever is still queued settles for a few seconds,
	// then every write counts.
	time.Sleep(5 * time.Second)
	steadyFrom := time.Now()
	time.Sleep(steady)
	steadyTo := time.Now()
	if result.steadyKiB, result.peakKiB, err = processMemory(pid); err != nil {
		b.Fatal(err)
	}
	result.idleHeapKiB, result.steadyHeapKiB = idleHeap, heapInUseKiB(b, metricsURL)
	user := serviceAccountUser(operatorAccount)
	if result.requests, result.requestTargets, err = countRequests(cluster.AuditLogPath(), user, began, done); err != nil {
		b.Fatal(err)
	}
	if result.steadyRequests, result.steadyTargets, err = countRequests(cluster.AuditLogPath(), user, steadyFrom, steadyTo); err != nil {
		b.Fatal(err)
	}
	return result
}

// heapInUseKiB reads the manager's Go heap in use.
func heapInUseKiB(b testing.TB, metricsURL string) int64 {
	families, err := scrape(metricsURL)
	if err != nil {
		b.Fatal(err)
	}
	bytes, err := gauge(families, heapInUse)
	if err != nil {
		b.Fatal(err)
	}
	return int64(bytes / 1024)
}

// createDatabases creates n copies of the benchmark's Database at once,
// as a fleet's GitOps sync would.
func createDatabases(ctx context.Context, c client.Client, prefix string, n int) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			db := &dbpilotv1alpha1.Database{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOf(prefix, i), Name: "db-" + strconv.Itoa(i)},
				Spec: dbpilotv1alpha1.DatabaseSpec{
					Engine:   dbpilotv1alpha1.EnginePostgres,
					Replicas: ptr.To[int32](1),
					Storage:  &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
				},
			}
			if err := c.Create(ctx, db); err != nil {
				errs <- fmt.Errorf("creating %s: %w", db.Name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// freeAddress is a loopback address with a port nobody listens on now.
func freeAddress(b testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls url until it answers 200.
func waitReady(b testing.TB, url string) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("manager not ready at %s after 2 minutes (last error: %v)", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
