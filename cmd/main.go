// Command manager runs the dbpilot operator: it wires flags, the scheme, the
// controllers, health probes, the authenticated metrics endpoint and leader
// election together, and nothing else.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbpilot/dbpilot/controllers"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/memlimit"
	"github.com/dbpilot/dbpilot/internal/options"
)

func main() {
	opts := options.Default()
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: !options.InCluster()}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")

	memoryLimit, err := memlimit.FromEnvironment()
	if err != nil {
		setupLog.Error(err, "Invalid memory limit")
		os.Exit(2)
	}
	gcPercent := memlimit.GCPercentFromEnvironment()
	mgrOptions, err := opts.ManagerOptions()
	if err != nil {
		setupLog.Error(err, "Invalid flags")
		os.Exit(2)
	}
	mgr, err := ctrl.NewManager(opts.RESTConfig(ctrl.GetConfigOrDie()), mgrOptions)
	if err != nil {
		setupLog.Error(err, "Unable to create manager")
		os.Exit(1)
	}
	images, err := imagecatalog.FromProcess()
	if err != nil {
		setupLog.Error(err, "Invalid image catalog")
		os.Exit(2)
	}
	inPlace, err := controllers.ServesPodResize(mgr.GetConfig())
	if err != nil {
		setupLog.Error(err, "Unable to tell whether pods can be resized in place")
		os.Exit(1)
	}
	setupLog.Info("Tier changes", "resizePodsInPlace", inPlace)
	if err := (&controllers.DatabaseReconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder(controllers.FieldOwner),
		Images:        images,
		Namespaces:    opts.Namespaces(),
		InPlaceResize: inPlace,
	}).SetupWithManager(mgr, opts.MaxConcurrentReconciles); err != nil {
		setupLog.Error(err, "Unable to set up controller", "controller", "Database")
		os.Exit(1)
	}
	if err := (&controllers.DatabaseBackupReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder(controllers.BackupFieldOwner),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Unable to set up controller", "controller", "DatabaseBackup")
		os.Exit(1)
	}
	runner, err := opts.AutopilotRunner(mgr)
	if err != nil {
		setupLog.Error(err, "Unable to set up the auto-pilot")
		os.Exit(1)
	}
	runner.InPlaceResize = inPlace
	if err := mgr.Add(runner); err != nil {
		setupLog.Error(err, "Unable to add the auto-pilot")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up ready check")
		os.Exit(1)
	}
	setupLog.Info("Starting manager", "watchNamespaces", fmt.Sprint(opts.WatchNamespaces), "leaderElection", opts.LeaderElection, "prometheus", opts.PrometheusURL != "", "goMemoryLimitBytes", memoryLimit, "goGCPercent", gcPercent)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}
