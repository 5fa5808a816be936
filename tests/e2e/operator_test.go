package e2e_test

import (
	"context"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/options"
)

// zapLevel is the operator's log level in tests: errors only, unless
// DBPILOT_TEST_LOG=debug.
func zapLevel() zapcore.Level {
	if os.Getenv("DBPILOT_TEST_LOG") == "debug" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// operator is a dbpilot manager running in the test process against the
// local control plane, watching one namespace.
type operator struct {
	cancel context.CancelFunc
	done   chan error
	// writes counts the requests other than GET, LIST and WATCH the manager
	// sent to the API server.
	writes atomic.Int64
	once   sync.Once

	mu       sync.Mutex
	writeLog []string
}

// writeRequests lists the method and path of every write request.
func (op *operator) writeRequests() []string {
	op.mu.Lock()
	defer op.mu.Unlock()
	return append([]string(nil), op.writeLog...)
}

// startOperator runs a manager that watches namespace, as the real binary is
// wired, and stops it in cleanup.
func startOperator(t testing.TB, namespace string) *operator {
	t.Helper()
	opts := options.Default()
	opts.WatchNamespaces = namespace
	opts.LeaderElection = false
	return startOperatorWith(t, restConfig, opts)
}

// startOperatorWith runs a manager with the given REST config and options
// (metrics and probes off), and stops it in cleanup.
func startOperatorWith(t testing.TB, base *rest.Config, opts *options.Options) *operator {
	t.Helper()
	op := &operator{done: make(chan error, 1)}
	cfg := rest.CopyConfig(base)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				op.writes.Add(1)
				op.mu.Lock()
				op.writeLog = append(op.writeLog, req.Method+" "+req.URL.Path)
				op.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	mgrOptions, err := opts.ManagerOptions()
	if err != nil {
		t.Fatalf("manager options: %v", err)
	}
	// Several managers run in one test process, one per test.
	mgrOptions.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(cfg, mgrOptions)
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	// As the binary finds out; kwok's pods report no container resources,
	// so their tier changes roll.
	inPlace, err := controllers.ServesPodResize(cfg)
	if err != nil {
		t.Fatalf("discovering pods/resize: %v", err)
	}
	if err := (&controllers.DatabaseReconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder(controllers.FieldOwner),
		Namespaces:    opts.Namespaces(),
		InPlaceResize: inPlace,
		// Replaced client authorities are retired soon: kwok's pods
		// mount nothing to wait for.
		ClientAuthorityOverlap: clientAuthorityOverlap,
	}).SetupWithManager(mgr, opts.MaxConcurrentReconciles); err != nil {
		t.Fatalf("setting up controller: %v", err)
	}
	if err := (&controllers.DatabaseBackupReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder(controllers.BackupFieldOwner),
	}).SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up the backup controller: %v", err)
	}
	runner, err := opts.AutopilotRunner(mgr)
	if err != nil {
		t.Fatalf("setting up the auto-pilot: %v", err)
	}
	if err := mgr.Add(runner); err != nil {
		t.Fatalf("adding the auto-pilot: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { op.stop(t) })
	return op
}

// stop stops the manager and waits for it to return.
func (op *operator) stop(t testing.TB) {
	op.once.Do(func() {
		op.cancel()
		select {
		case err := <-op.done:
			if err != nil {
				t.Errorf("manager stopped with error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("manager did not stop within a minute")
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// restrictedNamespace creates a namespace that enforces PodSecurity
// restricted, so every pod the operator makes must be admissible there.
func restrictedNamespace(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := clientset.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("default ServiceAccount of %s never appeared", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
