// Command demo-autopilot is `make demo-autopilot`: it starts a local control
// plane, a synthetic exporter that replays a load trace (sped up) as the
// metrics of a demo Database's pods, a real Prometheus scraping it, and the
// operator with the auto-pilot in Auto mode, and prints every decision as it
// happens, until the trace ends or Ctrl-C. Everything it starts is stopped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot/sim"
	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/loadexporter"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/options"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

func main() {
	tracePath := flag.String("trace", filepath.Join("autopilot", "sim", "testdata", "write-heavy-growth.csv"), "Load trace to replay.")
	speed := flag.Float64("speed", 40, "How many trace seconds pass per real second.")
	crds := flag.String("crds", filepath.Join("config", "crd", "bases"), "Directory of the CRDs.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *tracePath, *speed, *crds); err != nil {
		fmt.Fprintf(os.Stderr, "demo-autopilot: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tracePath string, speed float64, crds string) (err error) {
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	trace, err := sim.ReadTraceFile(tracePath)
	if err != nil {
		return err
	}
	fmt.Printf(">> starting the local control plane\n")
	c, err := localcluster.Start(ctx, localcluster.Config{Nodes: 3, BeforeControllers: func(cfg *rest.Config) error {
		_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
		return err
	}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Stop()) }()
	scheme, err := options.Scheme()
	if err != nil {
		return err
	}
	k8s, err := client.New(c.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}

	exporter, err := loadexporter.Start(loadexporter.DatabasePods(k8s, "default", "demo"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, exporter.Stop()) }()
	fmt.Printf(">> starting Prometheus, scraping the synthetic exporter every second\n")
	prom, err := promserver.Start(ctx, promserver.Config{ScrapeTargets: []string{exporter.Addr}, ScrapeInterval: time.Second})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, prom.Stop()) }()

	opts := options.Default()
	opts.LeaderElection = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.PrometheusURL = prom.URL
	opts.PrometheusRateWindow = 10 * time.Second
	opts.AutopilotInterval = 2 * time.Second
	opts.AutopilotSettleTime = 15 * time.Second
	mgrOptions, err := opts.ManagerOptions()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(c.RESTConfig, mgrOptions)
	if err != nil {
		return err
	}
	if err := (&controllers.DatabaseReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(controllers.FieldOwner)}).SetupWithManager(mgr, 4); err != nil {
		return err
	}
	runner, err := opts.AutopilotRunner(mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(runner); err != nil {
		return err
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = mgr.Start(mgrCtx) }()

	db := &dbpilotv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"},
		Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine: dbpilotv1alpha1.EnginePostgres, Replicas: ptr.To[int32](2), Tier: dbpilotv1alpha1.TierMedium,
			Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("10Gi"))},
			Autopilot: &dbpilotv1alpha1.AutopilotSpec{
				Mode:     dbpilotv1alpha1.AutopilotAuto,
				Replicas: &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 8},
				Tiers:    &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.Tier2XLarge},
				// Sped-up time: the windows shrink with it.
				ScaleUpStabilizationSeconds:   ptr.To(int32(60 / speed)),
				ScaleDownStabilizationSeconds: ptr.To(int32(600 / speed)),
				TierCooldownSeconds:           ptr.To(int32(900 / speed)),
			},
		},
	}
	if err := k8s.Create(ctx, db); err != nil {
		return err
	}
	fmt.Printf(">> Database default/demo: postgres, 2 medium pods, auto-pilot Auto within 1-8 pods, small-2xlarge\n")
	fmt.Printf(">> replaying %s at %gx (%s of load in %s); Ctrl-C stops\n\n", trace.Name, speed,
		time.Duration(trace.Duration())*time.Second, time.Duration(trace.Duration()/speed*float64(time.Second)).Round(time.Second))
	fmt.Printf("%-8s %-9s %-12s %-10s %-8s  %s\n", "time", "demand", "pods", "action", "reason", "signals")

	start := time.Now()
	var lastDecision time.Time
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		elapsed := time.Since(start).Seconds() * speed
		if elapsed > trace.Duration() {
			fmt.Println("\n>> trace finished")
			return nil
		}
		load, _ := trace.At(elapsed)
		exporter.SetDemand(load)
		current := &dbpilotv1alpha1.Database{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), current); err == nil && current.Status.Autopilot != nil && current.Status.Autopilot.LastDecision != nil {
			d := current.Status.Autopilot.LastDecision
			if d.Time.After(lastDecision) {
				lastDecision = d.Time.Time
				fmt.Printf("%-8s R%.1f W%.1f  %d %-9s  %-10s %-8s  %s\n", time.Duration(elapsed*float64(time.Second)).Round(time.Second),
					load.Read, load.Write, *current.Status.Autopilot.Recommendation.Replicas, current.Status.Autopilot.Recommendation.Tier,
					d.Action, d.Reason, signals(d.Signals))
			}
		}
		select {
		case <-ctx.Done():
			fmt.Println("\n>> interrupted")
			return nil
		case <-ticker.C:
		}
	}
}

func signals(s map[string]string) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		if strings.HasSuffix(k, "Load") || strings.HasSuffix(k, "Utilization") && strings.HasPrefix(k, "primary") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, " ")
}
