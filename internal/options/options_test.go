package options

import (
	"flag"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestWatchNamespacesFromFlag(t *testing.T) {
	cases := map[string][]string{
		"":                 nil,
		"shop":             {"shop"},
		"shop, billing ,,": {"shop", "billing"},
	}
	for value, want := range cases {
		opts := Default()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		opts.BindFlags(fs)
		if err := fs.Parse([]string{"--watch-namespaces=" + value}); err != nil {
			t.Fatal(err)
		}
		if got := opts.Namespaces(); !slices.Equal(got, want) {
			t.Errorf("%q: namespaces %v, want %v", value, got, want)
		}
		mgr, err := opts.ManagerOptions()
		if err != nil {
			t.Fatal(err)
		}
		if len(mgr.Cache.DefaultNamespaces) != len(want) {
			t.Errorf("%q: cache watches %d namespaces, want %d", value, len(mgr.Cache.DefaultNamespaces), len(want))
		}
	}
}

func TestWatchNamespaceEnvIsTheDefault(t *testing.T) {
	t.Setenv(WatchNamespaceEnv, "a,b")
	if got := Default().Namespaces(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("namespaces from %s = %v", WatchNamespaceEnv, got)
	}
}

func TestManagerOptionsRejectsZeroReconciles(t *testing.T) {
	opts := Default()
	opts.MaxConcurrentReconciles = 0
	if _, err := opts.ManagerOptions(); err == nil {
		t.Error("accepted --max-concurrent-reconciles=0")
	}
}

func TestMetricsAreAuthenticatedByDefault(t *testing.T) {
	mgr, err := Default().ManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !mgr.Metrics.SecureServing || mgr.Metrics.FilterProvider == nil {
		t.Error("metrics are served without TLS or without the authentication/authorization filter")
	}
}

func TestPrometheusFromEnvironment(t *testing.T) {
	t.Setenv(PrometheusURLEnv, "https://prometheus.monitoring.svc:9091")
	t.Setenv(PrometheusBearerTokenFileEnv, "/var/run/secrets/tokens/prometheus")
	opts := Default()
	if opts.PrometheusURL != "https://prometheus.monitoring.svc:9091" || opts.PrometheusBearerTokenFile != "/var/run/secrets/tokens/prometheus" {
		t.Errorf("Prometheus settings not taken from the environment: %+v", opts)
	}
}

func TestClientRateLimit(t *testing.T) {
	opts := Default()
	if got := opts.RESTConfig(&rest.Config{}); got.QPS >= 0 {
		t.Errorf("default QPS %g: want no client-side limit (negative)", got.QPS)
	}
	opts.KubeAPIQPS, opts.KubeAPIBurst = 30, 60
	if got := opts.RESTConfig(&rest.Config{}); got.QPS != 30 || got.Burst != 60 {
		t.Errorf("--kube-api-qps=30 --kube-api-burst=60 gave QPS %g burst %d", got.QPS, got.Burst)
	}
	for _, c := range []struct {
		qps   float64
		burst int
	}{{0, 100}, {10, 0}} {
		opts.KubeAPIQPS, opts.KubeAPIBurst = c.qps, c.burst
		if _, err := opts.ManagerOptions(); err == nil {
			t.Errorf("accepted --kube-api-qps=%g --kube-api-burst=%d", c.qps, c.burst)
		}
	}
}

func TestLeaderElectionTimings(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts := Default()
	opts.BindFlags(fs)
	if err := fs.Parse([]string{"--leader-elect", "--leader-elect-lease-duration=9s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s"}); err != nil {
		t.Fatal(err)
	}
	mgr, err := opts.ManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if *mgr.LeaseDuration != 9*time.Second || *mgr.RenewDeadline != 6*time.Second || *mgr.RetryPeriod != time.Second {
		t.Errorf("lease %s, renew %s, retry %s; want 9s, 6s, 1s", *mgr.LeaseDuration, *mgr.RenewDeadline, *mgr.RetryPeriod)
	}
	for _, bad := range [][3]time.Duration{{8 * time.Second, 8 * time.Second, 2 * time.Second}, {12 * time.Second, 2 * time.Second, 2 * time.Second}, {12 * time.Second, 8 * time.Second, 0}} {
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = bad[0], bad[1], bad[2]
		if _, err := opts.ManagerOptions(); err == nil {
			t.Errorf("accepted lease %s, renew %s, retry %s", bad[0], bad[1], bad[2])
		}
	}
}
