// Command run is `make run`: it runs the dbpilot manager against the cluster
// of $KUBECONFIG (or the one it runs in), or, when no cluster is configured,
// on a local control plane that it starts (and keeps across runs) with the
// CRDs installed and the sample Databases applied. It prints the samples'
// status as it changes until Ctrl-C, then stops everything it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/options"
)

func main() {
	managerPath := flag.String("manager", "bin/manager", "Path of the built manager binary.")
	crdDir := flag.String("crds", "config/crd/bases", "Directory of the CRD manifests.")
	samplesDir := flag.String("samples", "config/samples", "Directory of the sample Databases.")
	stateDir := flag.String("state", ".local/cluster", "State directory of the local control plane, kept across runs.")
	fresh := flag.Bool("fresh", false, "Delete the local control plane's state and start from scratch.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *managerPath, *crdDir, *samplesDir, *stateDir, *fresh); err != nil {
		fmt.Fprintf(os.Stderr, "run: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, managerPath, crdDir, samplesDir, stateDir string, fresh bool) error {
	started := time.Now()
	step := progress(started, 4)
	if configured() {
		step("using the configured cluster ($KUBECONFIG or in-cluster)")
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return err
		}
		if err := installCRDs(cfg, crdDir); err != nil {
			return err
		}
		return runManager(ctx, managerPath, os.Getenv("KUBECONFIG"), cfg, nil, nil, nil, os.Stdout)
	}

	if fresh {
		if err := os.RemoveAll(stateDir); err != nil {
			return fmt.Errorf("removing %s: %w", stateDir, err)
		}
	}
	realNode := localcluster.RealNodeAvailable() == nil
	if realNode {
		step("starting the local control plane with a real node in " + stateDir)
	} else {
		step(fmt.Sprintf("starting the local control plane with kwok nodes in %s: pods turn Ready without running anything, because %v", stateDir, localcluster.RealNodeAvailable()))
	}
	detail := func(s string) { fmt.Printf("       %6.1fs  %s\n", time.Since(started).Seconds(), s) }
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir:        stateDir,
		Persistent: true,
		RealNode:   realNode,
		Progress:   detail,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println(">> stopping the local control plane (state kept; `make run RUN_FLAGS=--fresh` starts over)")
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
	}()
	var managerEnv []string
	if realNode {
		detail("building the operator's image and the engine images from this machine's Debian packages")
		images, err := c.PushDbpilotImages(ctx)
		if err != nil {
			return err
		}
		managerEnv = images.Variables()
	}
	detail("component logs are in " + c.LogDir())
	step("installing the CRDs")
	if err := installCRDs(c.RESTConfig, crdDir); err != nil {
		return err
	}
	step("applying the samples and starting the manager")
	samples, err := applySamples(ctx, c.RESTConfig, samplesDir)
	if err != nil {
		return err
	}
	kubectl, _ := filepath.Abs(filepath.Join("bin", "kubectl"))
	fmt.Printf(`
dbpilot runs on a local control plane. In another terminal:

    export KUBECONFIG=%s
    %s get databases
    %s describe database %s
%s
Ctrl-C stops the manager and the control plane.

`, c.KubeconfigPath, kubectl, kubectl, samples[0].GetName(), nodeNote(realNode))
	var announce func(context.Context, client.Client, *dbpilotv1alpha1.Database)
	if realNode {
		announce = func(ctx context.Context, c client.Client, db *dbpilotv1alpha1.Database) {
			printConnectCommand(ctx, c, kubectl, stateDir, db)
		}
	}
	managerLog, err := os.OpenFile(filepath.Join(c.LogDir(), "manager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer managerLog.Close()
	fmt.Printf("The manager logs to %s.\n\n", managerLog.Name())
	return runManager(ctx, managerPath, c.KubeconfigPath, c.RESTConfig, samples, managerEnv, announce, managerLog)
}

func nodeNote(realNode bool) string {
	if realNode {
		return "\nThe database runs for real: once it is Available, a connect command is printed.\n"
	}
	return "\nkwok nodes run no database: there is nothing to connect to.\n"
}

// printConnectCommand prints how to reach an Available database from this
// machine through its read-write Service, over TLS verified against the
// Database's authority (written to the state directory; the command
// connects to the Service's address, which the certificate does not name,
// so the chain is verified, not the name), with the password read from the
// credentials Secret by the command itself (it is never printed here).
func printConnectCommand(ctx context.Context, c client.Client, kubectl, stateDir string, db *dbpilotv1alpha1.Database) {
	svc := &corev1.Service{}
	secret := &corev1.Secret{}
	authority := &corev1.Secret{}
	if c.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ReadWriteServiceName()}, svc) != nil ||
		c.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.CredentialsSecretName()}, secret) != nil ||
		c.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, authority) != nil {
		return
	}
	caFile := filepath.Join(stateDir, db.Name+"-ca.crt")
	if err := os.WriteFile(caFile, authority.Data[layout.KeyCACert], 0o644); err != nil {
		return
	}
	user := string(secret.Data[desired.SecretKeyUsername])
	password := fmt.Sprintf("$(%s get secret %s -o jsonpath='{.data.%s}' | base64 -d)", kubectl, db.CredentialsSecretName(), desired.SecretKeyPassword)
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		fmt.Printf("\n>> database/%s accepts connections. From this machine:\n\n    PGPASSWORD=%s psql 'host=%s user=%s dbname=%s sslmode=verify-ca sslrootcert=%s'\n\n",
			db.Name, password, svc.Spec.ClusterIP, user, user, caFile)
		return
	}
	fmt.Printf("\n>> database/%s accepts connections. From this machine:\n\n    mariadb -h %s -u %s -p%s --ssl-ca=%s %s\n\n",
		db.Name, svc.Spec.ClusterIP, user, password, caFile, user)
}

// progress returns a function that prints numbered steps with the time
// elapsed since start.
func progress(start time.Time, total int) func(string) {
	n := 0
	return func(what string) {
		n++
		fmt.Printf(">> [%d/%d] %6.1fs  %s\n", n, total, time.Since(start).Seconds(), what)
	}
}

// configured reports whether a cluster is configured for this process.
func configured() bool {
	return os.Getenv("KUBECONFIG") != "" || options.InCluster()
}

func installCRDs(cfg *rest.Config, dir string) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// applySamples server-side applies every sample manifest in dir (the
// Database, then the DatabaseBackup of it) to the default namespace.
func applySamples(ctx context.Context, cfg *rest.Config, dir string) ([]*unstructured.Unstructured, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "dbpilot_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no samples in %s", dir)
	}
	var samples []*unstructured.Unstructured
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				f.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("reading %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			obj.SetNamespace("default")
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("dbpilot-make-run"), client.ForceOwnership); err != nil {
				f.Close()
				return nil, fmt.Errorf("applying sample %s: %w", obj.GetName(), err)
			}
			samples = append(samples, obj)
		}
	}
	return samples, nil
}

// runManager runs the manager binary until ctx ends or it exits, printing the
// samples' status whenever it changes.
func runManager(ctx context.Context, managerPath, kubeconfig string, cfg *rest.Config, samples []*unstructured.Unstructured, env []string,
	announce func(context.Context, client.Client, *dbpilotv1alpha1.Database), logTo io.Writer) error {
	metricsPort, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	probePort, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(managerPath,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		"--leader-elect=false",
	)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), env...)
	cmd.Stdout, cmd.Stderr = logTo, logTo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting manager: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if len(samples) > 0 {
		go watchSamples(ctx, cfg, samples, announce)
	}
	select {
	case err := <-exited:
		return fmt.Errorf("manager exited: %w", err)
	case <-ctx.Done():
	}
	fmt.Println(">> stopping the manager")
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(40 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return nil
}

// watchSamples prints one line per sample whenever its status changes, and
// announces each sample the first time it is Available.
func watchSamples(ctx context.Context, cfg *rest.Config, samples []*unstructured.Unstructured,
	announce func(context.Context, client.Client, *dbpilotv1alpha1.Database)) {
	scheme, err := options.Scheme()
	if err != nil {
		return
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return
	}
	last := map[string]string{}
	announced := map[string]bool{}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		for _, sample := range samples {
			if sample.GetKind() == "DatabaseBackup" {
				b := &dbpilotv1alpha1.DatabaseBackup{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(sample), b); err != nil {
					continue
				}
				line := fmt.Sprintf("phase=%s instance=%s size=%v  %s", b.Status.Phase, b.Status.Instance, b.Status.Size, b.Status.Message)
				if line != last["backup/"+b.Name] {
					last["backup/"+b.Name] = line
					fmt.Printf("%s  databasebackup/%s  %s\n", time.Now().Format("15:04:05"), b.Name, line)
				}
				continue
			}
			db := &dbpilotv1alpha1.Database{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(sample), db); err != nil {
				continue
			}
			line := statusLine(db)
			if line != last[db.Name] {
				last[db.Name] = line
				fmt.Printf("%s  database/%s  %s\n", time.Now().Format("15:04:05"), db.Name, line)
			}
			if announce != nil && !announced[db.Name] && meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable) {
				announced[db.Name] = true
				announce(ctx, c, db)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// statusLine summarises a Database's status on one line.
func statusLine(db *dbpilotv1alpha1.Database) string {
	var conditions []string
	for _, condType := range []string{dbpilotv1alpha1.ConditionAvailable, dbpilotv1alpha1.ConditionProgressing, dbpilotv1alpha1.ConditionDegraded} {
		if cond := meta.FindStatusCondition(db.Status.Conditions, condType); cond != nil {
			conditions = append(conditions, fmt.Sprintf("%s=%s(%s)", condType, cond.Status, cond.Reason))
		}
	}
	phase := string(db.Status.Phase)
	if phase == "" {
		phase = "Pending"
	}
	return fmt.Sprintf("phase=%s ready=%s tier=%s version=%s  %s", phase, db.Status.Ready, db.Status.Tier, db.Status.Version, strings.Join(conditions, " "))
}
