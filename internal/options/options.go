// Package options holds the manager's command-line options and turns them
// into controller-runtime manager options.
package options

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/nodedrain"
)

// WatchNamespaceEnv is the environment variable OLM fills from the
// olm.targetNamespaces annotation: a comma-separated list of namespaces, empty
// for all namespaces.
const WatchNamespaceEnv = "WATCH_NAMESPACE"

// PrometheusURLEnv, PrometheusBearerTokenFileEnv and PrometheusCAFileEnv set
// the defaults of the Prometheus flags, so an OLM Subscription can configure
// the auto-pilot through spec.config.env.
const (
	PrometheusURLEnv             = "PROMETHEUS_URL"
	PrometheusBearerTokenFileEnv = "PROMETHEUS_BEARER_TOKEN_FILE"
	PrometheusCAFileEnv          = "PROMETHEUS_CA_FILE"
)

// DefaultKubeAPIQPS turns the client-side rate limit off, as
// controller-runtime does by default: the API server's priority and
// fairness shares its capacity between clients, and `make bench-scale`
// (docs/benchmarks.md) shows the operator keeping pace with the cluster
// without one. A positive --kube-api-qps turns one on.
const DefaultKubeAPIQPS = -1

// DefaultKubeAPIBurst is the burst of a client-side rate limit, when one is on.
const DefaultKubeAPIBurst = 100

// LeaderElectionID names the Lease that elects the active manager.
const LeaderElectionID = "dbpilot.dbpilot.io"

// The leader election's defaults: a standby leads at most 18.6 s after the
// leader's death, usually about 14 s (Kubernetes' own 15 s / 10 s / 2 s
// take up to 23.8 s), and a leader that cannot renew for 8 s steps down.
// With client-go's jitter a standby tries every 1.5–3.3 s.
const (
	DefaultLeaseDuration = 12 * time.Second
	DefaultRenewDeadline = 8 * time.Second
	DefaultRetryPeriod   = 1500 * time.Millisecond
)

// Options are the manager's command-line options.
type Options struct {
	MetricsBindAddress     string
	MetricsSecure          bool
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles (net/http/pprof) when set; they
	// are unauthenticated, so the flag is for a developer's loopback only.
	PprofBindAddress        string
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// election: a standby takes over at most LeaseDuration plus two of its
	// tries' intervals after the leader dies without releasing the Lease
	// (client-go jitters each to 1–2.2 RetryPeriods).
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	MaxConcurrentReconciles int
	// KubeAPIQPS and KubeAPIBurst rate-limit the manager's requests to
	// the API server on the client side, when KubeAPIQPS is positive.
	KubeAPIQPS              float64
	KubeAPIBurst            int
	WatchNamespaces         string
	GracefulShutdownTimeout time.Duration

	// The auto-pilot's Prometheus and cadence. The address is an operator
	// flag, never a Database field: a namespace user must not be able to
	// point the operator at arbitrary URLs.
	PrometheusURL             string
	PrometheusBearerTokenFile string
	PrometheusCAFile          string
	PrometheusTimeout         time.Duration
	PrometheusRateWindow      time.Duration
	AutopilotInterval         time.Duration
	AutopilotSettleTime       time.Duration
	AutopilotFlapWindow       time.Duration
}

// Default returns the options a manager runs with when no flag is given.
// Leader election is on in a cluster, where several replicas may run, and off
// on a developer's machine.
func Default() *Options {
	return &Options{
		MetricsBindAddress:        ":8443",
		MetricsSecure:             true,
		HealthProbeBindAddress:    ":8081",
		LeaderElection:            InCluster(),
		LeaseDuration:             DefaultLeaseDuration,
		RenewDeadline:             DefaultRenewDeadline,
		RetryPeriod:               DefaultRetryPeriod,
		MaxConcurrentReconciles:   4,
		KubeAPIQPS:                DefaultKubeAPIQPS,
		KubeAPIBurst:              DefaultKubeAPIBurst,
		WatchNamespaces:           os.Getenv(WatchNamespaceEnv),
		GracefulShutdownTimeout:   30 * time.Second,
		PrometheusURL:             os.Getenv(PrometheusURLEnv),
		PrometheusBearerTokenFile: os.Getenv(PrometheusBearerTokenFileEnv),
		PrometheusCAFile:          os.Getenv(PrometheusCAFileEnv),
		PrometheusTimeout:         10 * time.Second,
		PrometheusRateWindow:      2 * time.Minute,
		AutopilotInterval:         15 * time.Second,
		AutopilotSettleTime:       150 * time.Second,
		AutopilotFlapWindow:       autopilot.DefaultFlapWindow,
	}
}

// BindFlags registers the options on a flag set.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve metrics over HTTPS, only to clients that are authenticated and authorized to get /metrics.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz probes.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address to serve Go's pprof profiles on, unauthenticated, e.g. 127.0.0.1:6060; empty or \"0\" disables it (the default).")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "Elect one active manager through a Lease (default on in a cluster).")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease (default: the manager's own namespace).")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits, after it last saw the leader renew the Lease, before it takes over.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew the Lease before it steps down (and exits); shorter than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often the leader renews the Lease and a standby tries to take it.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "How many Databases are reconciled at once.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second the manager sends the API server at most, on average, per resource type; negative: no client-side limit, the API server's priority and fairness governs.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests the manager may send the API server in a burst above --kube-api-qps.")
	fs.StringVar(&o.WatchNamespaces, "watch-namespaces", o.WatchNamespaces, "Comma-separated namespaces to watch, empty for all (default: $"+WatchNamespaceEnv+", as set by OLM).")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "How long running reconciles may take to finish on shutdown.")
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "Prometheus the auto-pilot reads metrics from (default $"+PrometheusURLEnv+"); without it the auto-pilot holds and says so.")
	fs.StringVar(&o.PrometheusBearerTokenFile, "prometheus-bearer-token-file", o.PrometheusBearerTokenFile, "File holding a bearer token for Prometheus, read on every query.")
	fs.StringVar(&o.PrometheusCAFile, "prometheus-ca-file", o.PrometheusCAFile, "CA certificates to verify Prometheus' TLS certificate with.")
	fs.DurationVar(&o.PrometheusTimeout, "prometheus-timeout", o.PrometheusTimeout, "Timeout of each Prometheus query.")
	fs.DurationVar(&o.PrometheusRateWindow, "prometheus-rate-window", o.PrometheusRateWindow, "Window of the rates the auto-pilot queries; at least two scrape intervals.")
	fs.DurationVar(&o.AutopilotInterval, "autopilot-interval", o.AutopilotInterval, "Time between two auto-pilot evaluations of every Database.")
	fs.DurationVar(&o.AutopilotFlapWindow, "autopilot-flap-window", o.AutopilotFlapWindow, "How long after a scale-up the auto-pilot waits before any scale-down (and before its first one), and how far ahead the load's trend must fit a smaller size.")
	fs.DurationVar(&o.AutopilotSettleTime, "autopilot-settle-time", o.AutopilotSettleTime, "How long after a change the auto-pilot waits for the metrics to reflect it (Prometheus' rate window plus a scrape).")
}

// RESTConfig sets the client-side rate limit, or its absence, on cfg.
func (o *Options) RESTConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	return out
}

// Namespaces returns the watched namespaces, or nil for all of them.
func (o *Options) Namespaces() []string {
	var namespaces []string
	for _, ns := range strings.Split(o.WatchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces
}

// Scheme returns a scheme with the built-in Kubernetes types and dbpilot's.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding Kubernetes types to scheme: %w", err)
	}
	if err := dbpilotv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding dbpilot types to scheme: %w", err)
	}
	return scheme, nil
}

// ManagerOptions turns the options into controller-runtime manager options.
func (o *Options) ManagerOptions() (ctrl.Options, error) {
	if o.AutopilotInterval < time.Second {
		return ctrl.Options{}, fmt.Errorf("--autopilot-interval must be at least 1s, got %s", o.AutopilotInterval)
	}
	if o.KubeAPIQPS == 0 || (o.KubeAPIQPS > 0 && o.KubeAPIBurst < 1) {
		return ctrl.Options{}, fmt.Errorf("--kube-api-qps must be positive (a limit, with --kube-api-burst at least 1) or negative (none), got %g and burst %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.MaxConcurrentReconciles < 1 {
		return ctrl.Options{}, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles)
	}
	if o.LeaderElection && !(o.RetryPeriod > 0 && o.RenewDeadline > o.RetryPeriod*6/5 && o.LeaseDuration > o.RenewDeadline) {
		return ctrl.Options{}, fmt.Errorf("--leader-elect-lease-duration (%s) must exceed --leader-elect-renew-deadline (%s), which must exceed 1.2 times --leader-elect-retry-period (%s)", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	scheme, err := Scheme()
	if err != nil {
		return ctrl.Options{}, err
	}
	metrics := metricsserver.Options{BindAddress: o.MetricsBindAddress, SecureServing: o.MetricsSecure}
	if o.MetricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	// Only the objects dbpilot labelled are cached: it never holds every
	// pod, claim, ConfigMap or Secret of the cluster in memory. A user's own
	// credentials Secret is read directly.
	//
	// No managed fields are cached, nor the pod specs dbpilot never reads
	// (controllers.TransformPodForCache): they are most of an object's size.
	// For the objects it server-side applies, the cache keeps the hash of the
	// fields it owns instead (controllers.TransformOwnedFields).
	managed := labels.SelectorFromSet(labels.Set{dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue})
	stripped := cache.TransformStripManagedFields()
	owned := controllers.TransformOwnedFields()
	cacheOptions := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&dbpilotv1alpha1.Database{}:     {Transform: stripped},
			&corev1.Secret{}:                {Label: managed, Transform: stripped},
			&corev1.Pod{}:                   {Label: managed, Transform: controllers.TransformPodForCache},
			&corev1.PersistentVolumeClaim{}: {Label: managed, Transform: stripped},
			&corev1.ConfigMap{}:             {Label: managed, Transform: owned},
			&corev1.Service{}:               {Label: managed, Transform: owned},
			&appsv1.StatefulSet{}:           {Label: managed, Transform: owned},
			&policyv1.PodDisruptionBudget{}: {Label: managed, Transform: owned},
			// Every node, trimmed to what tells a drain: the primary's
			// node being emptied starts a switchover.
			&corev1.Node{}: {Transform: nodedrain.TransformForCache},
		},
	}
	if namespaces := o.Namespaces(); len(namespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			cacheOptions.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	timeout := o.GracefulShutdownTimeout
	lease, renew, retry := o.LeaseDuration, o.RenewDeadline, o.RetryPeriod
	return ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Cache:                         cacheOptions,
		GracefulShutdownTimeout:       &timeout,
	}, nil
}

// InCluster reports whether the process runs in a Kubernetes pod.
func InCluster() bool {
	_, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token")
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && err == nil
}
