// Package realnode_test runs dbpilot against the local control plane with a
// real node: pods run the operator's instance program and real PostgreSQL 15
// and MariaDB 10.11 servers from images built from this machine's Debian
// packages, and data really flows through the Services.
package realnode_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/options"
)

// inProcessNamespaces are watched by the operator this test process runs.
const inProcessNamespaces = "real-postgres,real-mariadb,real-replicas-postgres,real-replicas-mariadb,real-failover-postgres,real-failover-mariadb,real-default-delay-postgres,real-default-delay-mariadb,real-sync-postgres,real-sync-mariadb,real-sync-diverged,real-rollout-postgres,real-rollout-mariadb,real-faults-postgres,real-faults-mariadb,real-backup-postgres,real-backup-mariadb,real-backup-claim,real-metrics,real-autopilot,real-autopilot-mariadb,real-staging-timeout,real-renewal-postgres,real-renewal-mariadb,real-parameters-postgres,real-parameters-mariadb,real-expose,real-resize-refused,real-hibernate-backup"

// stageMountTimeout is how long the suite's operator waits for the pods
// to mount each step of a staged change of certificate authority (5
// minutes in a deployment): the node's kubelet syncs every 10 s, and the
// staging test freezes it for this long.
const stageMountTimeout = time.Minute

var (
	cluster   *localcluster.Cluster
	k8sClient client.Client
	clientset kubernetes.Interface
	images    imagecatalog.Catalog
	// operatorMetricsAddress is where the in-process operator serves its
	// metrics.
	operatorMetricsAddress string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	if err := localcluster.RealNodeAvailable(); err != nil {
		if localcluster.RealNodeOptional() {
			fmt.Fprintf(os.Stderr, "SKIP: no real node on this machine: %v\n", err)
			return 0
		}
		fmt.Fprintf(os.Stderr, "FAIL: no real node on this machine: %v (DBPILOT_REALNODE=skip, or make test REALNODE=skip, skips these tests)\n", err)
		return 1
	}
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(&operatorLog, errorsTo{os.Stderr})), zap.Level(zapcore.DebugLevel)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	// The CRDs go in before the controller manager starts, so its garbage
	// collector knows Databases from the first test on.
	c, err := localcluster.Start(ctx, localcluster.Config{RealNode: true, BeforeControllers: localcluster.InstallRepositoryCRDs})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting control plane with a real node: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "control plane and real node up in %.1fs\n", time.Since(start).Seconds())
	cluster = c
	code = 1
	defer c.StopAfterTests(&code)
	start = time.Now()
	if images, err = c.PushDbpilotImages(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "images built and pushed in %.1fs\n", time.Since(start).Seconds())
	scheme, err := options.Scheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8sClient, err = client.New(c.RESTConfig, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if clientset, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopOperator, err := startOperator(scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopOperator()
	return m.Run()
}

// startOperator runs the manager in this process, wired as the binary is,
// with the image catalog of the local images.
func startOperator(scheme any) (func(), error) {
	opts := options.Default()
	// Only the namespaces of the tests that use this operator: the OLM
	// test's Databases must be reconciled by the operator OLM installs.
	opts.WatchNamespaces = inProcessNamespaces
	opts.LeaderElection = false
	// Its metrics are served as the binary serves them (HTTPS, to
	// authorized tokens), on the host for the Prometheus of the tests.
	port, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	operatorMetricsAddress = fmt.Sprintf("127.0.0.1:%d", port)
	opts.MetricsBindAddress = operatorMetricsAddress
	opts.HealthProbeBindAddress = "0"
	mgrOptions, err := opts.ManagerOptions()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cluster.RESTConfig, mgrOptions)
	if err != nil {
		return nil, err
	}
	// The real node resizes pods in place, as the binary finds out.
	inPlace, err := controllers.ServesPodResize(cluster.RESTConfig)
	if err != nil {
		return nil, err
	}
	if err := (&controllers.DatabaseReconciler{
		Client:                 mgr.GetClient(),
		APIReader:              mgr.GetAPIReader(),
		Recorder:               mgr.GetEventRecorder(controllers.FieldOwner),
		Images:                 images,
		Namespaces:             opts.Namespaces(),
		InPlaceResize:          inPlace,
		StageMountTimeout:      stageMountTimeout,
		ClientAuthorityOverlap: clientAuthorityOverlap,
	}).SetupWithManager(mgr, opts.MaxConcurrentReconciles); err != nil {
		return nil, err
	}
	if err := (&controllers.DatabaseBackupReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder(controllers.BackupFieldOwner),
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// The auto-pilot reads the Prometheus a test points it at, with short
	// windows so real load moves it within minutes.
	if err := mgr.Add(&controllers.AutopilotRunner{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorder(controllers.AutopilotFieldOwner),
		Source:        &autopilotSource,
		Interval:      autopilotInterval,
		SettleTime:    autopilotSettleTime,
		FlapWindow:    autopilotFlapWindow,
		InPlaceResize: inPlace,
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "manager stopped with error: %v\n", err)
			}
		case <-time.After(time.Minute):
			fmt.Fprintln(os.Stderr, "manager did not stop within a minute")
		}
	}, nil
}
