// Package localcluster runs a real local Kubernetes control plane for tests,
// `make run` and the demos: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (fake nodes whose pods become Running and Ready
// without a kubelet), plus an in-process dynamic volume provisioner, all on
// 127.0.0.1; and, where the machine allows it, one real node (containerd,
// runc, the CNI bridge, kubelet and kube-proxy) whose pods really run, with a
// local image registry that serves images under their real names.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// kwokPodCIDR is where kwok draws its fake pods' addresses.
	kwokPodCIDR = "127.77.0.0/16"

	// serviceClusterIPRange is the Services' virtual IP range; the first
	// address is the kubernetes Service, which the serving certificate names.
	serviceClusterIPRange = "10.96.0.0/16"
	serviceClusterIP      = "10.96.0.1"

	// stopGrace is how long each process gets to shut down before SIGKILL.
	stopGrace = 20 * time.Second
)

// Config says what control plane to start.
type Config struct {
	// Binaries are the programs to run; BinariesIn(DefaultBinDir()) when empty.
	Binaries Binaries
	// Dir holds certificates, etcd data, kubeconfig and logs. A new temporary
	// directory when empty.
	Dir string
	// Persistent keeps Dir (and etcd's data, with fsync on) after Stop, and
	// reuses it on the next Start.
	Persistent bool
	// Nodes is the number of fake nodes, spread over three zones (default 3
	// without a real node, 0 with one).
	Nodes int
	// RealNode adds one real node whose pods run (see RealNodeAvailable).
	// The API server then listens on the node's bridge address.
	RealNode bool
	// ImageCacheDir caches the images built for the real node; bin/images
	// in the repository when empty.
	ImageCacheDir string
	// Progress, when set, receives a line for each step as it starts.
	Progress func(step string)
	// BeforeControllers, when set, runs once the API server answers and
	// before the controller manager starts: CRDs installed there are known
	// to the garbage collector from its start, as in a cluster where they
	// were installed long before (installed later, it learns their kinds
	// only at its next discovery, up to 30 s on, and dependents of objects
	// deleted meanwhile wait on its backoff).
	BeforeControllers func(*rest.Config) error
	// AuditPolicy, when set, is a kube-apiserver audit policy (YAML): the
	// API server then writes the events it selects, as JSON lines, to
	// AuditLogPath.
	AuditPolicy string
}

// Cluster is a running local control plane.
type Cluster struct {
	// RESTConfig reaches the API server as a cluster administrator.
	RESTConfig *rest.Config
	// KubeconfigPath is a kubeconfig file for the same administrator.
	KubeconfigPath string
	// Dir is the cluster's state directory.
	Dir string

	cfg       Config
	processes []*process
	node      *realNode
	apiHost   string
	cancel    context.CancelFunc
	stopped   bool
}

// Start brings the control plane up and waits until nodes are Ready and the
// default StorageClass exists. On error everything started so far is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Binaries == (Binaries{}) {
		dir, err := DefaultBinDir()
		if err != nil {
			return nil, err
		}
		cfg.Binaries = BinariesIn(dir)
	}
	if cfg.Nodes == 0 && !cfg.RealNode {
		cfg.Nodes = 3
	}
	if err := cfg.Binaries.check(cfg.RealNode, cfg.Nodes > 0); err != nil {
		return nil, err
	}
	if cfg.ImageCacheDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		cfg.ImageCacheDir = filepath.Join(root, "bin", "images")
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "dbpilot-cluster-"); err != nil {
			return nil, fmt.Errorf("creating cluster directory: %w", err)
		}
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{"logs", "etcd", "volumes"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", sub, err)
		}
	}
	c = &Cluster{Dir: cfg.Dir, cfg: cfg, KubeconfigPath: filepath.Join(cfg.Dir, "kubeconfig"), apiHost: "127.0.0.1"}
	defer func() {
		if err != nil {
			err = errors.Join(err, fmt.Errorf("logs are in %s", c.LogDir()), c.Stop())
		}
	}()
	if cfg.RealNode {
		cfg.Progress("real node: lock, host state, bridge")
		if c.node, err = prepareRealNode(filepath.Join(cfg.Dir, "node")); err != nil {
			return c, err
		}
		c.apiHost = BridgeIP
	}

	certs := pki{dir: filepath.Join(cfg.Dir, "pki")}
	cfg.Progress("certificates")
	if err := certs.ensure(); err != nil {
		return c, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return c, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	cfg.Progress("etcd")
	if err := c.startEtcd(etcdClient, etcdPeer); err != nil {
		return c, err
	}
	if err := waitHTTP(ctx, c.processes[len(c.processes)-1], fmt.Sprintf("http://127.0.0.1:%d/health", etcdClient), nil, 30*time.Second); err != nil {
		return c, fmt.Errorf("etcd not healthy: %w", err)
	}

	cfg.Progress("kube-apiserver")
	if err := c.startAPIServer(certs, etcdClient, apiPort); err != nil {
		return c, err
	}
	c.RESTConfig = adminRESTConfig(certs, c.apiHost, apiPort)
	if err := writeKubeconfig(c.KubeconfigPath, certs, c.apiHost, apiPort); err != nil {
		return c, err
	}
	apiserver := c.processes[len(c.processes)-1]
	if err := waitAPIServer(ctx, apiserver, c.RESTConfig, 60*time.Second); err != nil {
		return c, fmt.Errorf("kube-apiserver not ready: %w", err)
	}

	if cfg.BeforeControllers != nil {
		cfg.Progress("before the controllers")
		if err := cfg.BeforeControllers(c.RESTConfig); err != nil {
			return c, err
		}
	}
	cfg.Progress("kube-controller-manager")
	if err := c.startControllerManager(certs, kcmPort); err != nil {
		return c, err
	}
	cfg.Progress("kube-scheduler")
	if err := c.startScheduler(schedPort); err != nil {
		return c, err
	}
	if cfg.Nodes > 0 {
		cfg.Progress("kwok")
		if err := c.startKwok(); err != nil {
			return c, err
		}
	}

	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return c, fmt.Errorf("creating clientset: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	cfg.Progress("volume provisioner")
	provisioner := volumeProvisioner{dir: filepath.Join(cfg.Dir, "volumes")}
	if c.node != nil {
		provisioner = volumeProvisioner{dir: filepath.Join(c.node.dir, "volumes"), node: RealNodeName}
	}
	if err := startProvisioner(runCtx, clientset, provisioner, c.LogDir()); err != nil {
		return c, err
	}
	if err := ensureStorageClass(ctx, clientset); err != nil {
		return c, err
	}
	if cfg.Nodes > 0 {
		cfg.Progress(fmt.Sprintf("%d fake nodes", cfg.Nodes))
		if err := ensureNodes(ctx, clientset, cfg.Nodes); err != nil {
			return c, err
		}
	}
	if err := c.waitReady(ctx, clientset, kcmPort, schedPort); err != nil {
		return c, err
	}
	if c.node != nil {
		if err := c.startRealNode(ctx, certs, apiPort); err != nil {
			return c, err
		}
	}
	return c, nil
}

// LogDir is where each process writes its log.
func (c *Cluster) LogDir() string { return filepath.Join(c.Dir, "logs") }

// PIDs returns the process ids of every process the cluster started.
func (c *Cluster) PIDs() []int {
	pids := make([]int, 0, len(c.processes))
	for _, p := range c.allProcesses() {
		pids = append(pids, p.pid())
	}
	return pids
}

// PID is the process id of the component the cluster started as name
// ("kubelet", "containerd", "kube-apiserver", ...): for a test that
// freezes one with SIGSTOP.
func (c *Cluster) PID(name string) (int, error) {
	for _, p := range c.allProcesses() {
		if p.name == name {
			return p.pid(), nil
		}
	}
	return 0, fmt.Errorf("no component named %s", name)
}

// HasRealNode reports whether the cluster runs a real node.
func (c *Cluster) HasRealNode() bool { return c.node != nil }

// AdminCertificate is the administrator's client certificate and key, and
// the cluster's CA, as files: the kubelet of the real node accepts the
// certificate (a scraper of its /metrics/cadvisor uses it).
func (c *Cluster) AdminCertificate() (certFile, keyFile, caFile string) {
	certs := pki{dir: filepath.Join(c.Dir, "pki")}
	return certs.adminCert(), certs.adminKey(), certs.caCert()
}

func (c *Cluster) allProcesses() []*process {
	all := append([]*process{}, c.processes...)
	if c.node != nil {
		all = append(all, c.node.procs...)
	}
	return all
}

// Stop stops every process in reverse start order, then removes the state
// directory unless the cluster is persistent or keep is set. Calling it again
// does nothing.
func (c *Cluster) Stop() error {
	return c.stop(false)
}

// StopKeepingLogs stops the cluster and leaves its directory (logs included)
// in place, for a failed test to be looked into.
func (c *Cluster) StopKeepingLogs() error {
	return c.stop(true)
}

func (c *Cluster) stop(keep bool) error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
	var errs []error
	if c.node != nil {
		// The node first: the kubelet needs no API server to stop, and the
		// API server must outlive nothing that writes to it.
		if err := c.node.stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the real node: %w", err))
		}
	}
	for i := len(c.processes) - 1; i >= 0; i-- {
		if err := c.processes[i].stop(stopGrace); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", c.processes[i].name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if keep || c.cfg.Persistent {
		return nil
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("removing cluster directory: %w", err)
	}
	return nil
}

// CheckStopped returns an error naming any process of the cluster that still
// runs; tests call it in teardown.
func (c *Cluster) CheckStopped() error {
	var errs []error
	for _, p := range c.allProcesses() {
		if err := groupGone(p.pid()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) start(name, binary string, args ...string) error {
	p, err := startProcess(name, binary, args, c.LogDir())
	if err != nil {
		return err
	}
	c.processes = append(c.processes, p)
	return nil
}

func (c *Cluster) startEtcd(clientPort, peerPort int) error {
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name=dbpilot",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=dbpilot=" + peerURL,
		"--log-level=warn",
	}
	if !c.cfg.Persistent {
		// Test clusters are thrown away; fsync only slows them down.
		args = append(args, "--unsafe-no-fsync")
	}
	return c.start("etcd", c.cfg.Binaries.Etcd, args...)
}

// AuditLogPath is the API server's audit log, written when
// Config.AuditPolicy is set.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.Dir, "audit.log") }

func (c *Cluster) startAPIServer(certs pki, etcdPort, port int) error {
	args, err := c.auditArgs()
	if err != nil {
		return err
	}
	return c.start("kube-apiserver", c.cfg.Binaries.APIServer, append(args,
		"--etcd-servers="+fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		// With a real node, the API server listens on the node's bridge and
		// advertises it: pods reach it through the kubernetes Service, whose
		// endpoint may not be a loopback address.
		"--bind-address="+c.apiHost,
		"--advertise-address="+c.apiHost,
		"--secure-port="+strconv.Itoa(port),
		"--kubelet-client-certificate="+certs.adminCert(),
		"--kubelet-client-key="+certs.adminKey(),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file="+certs.servingCert(),
		"--tls-private-key-file="+certs.servingKey(),
		"--client-ca-file="+certs.caCert(),
		"--service-account-key-file="+certs.serviceAccountPub(),
		"--service-account-signing-key-file="+certs.serviceAccountKey(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range="+serviceClusterIPRange,
		"--authorization-mode=RBAC,Node",
		"--profiling=false",
	)...)
}

// auditArgs writes the audit policy, if any, and returns the flags that
// turn auditing on.
func (c *Cluster) auditArgs() ([]string, error) {
	if c.cfg.AuditPolicy == "" {
		return nil, nil
	}
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(c.cfg.AuditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("writing audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + c.AuditLogPath(),
		"--audit-log-format=json",
	}, nil
}

func (c *Cluster) startControllerManager(certs pki, port int) error {
	return c.start("kube-controller-manager", c.cfg.Binaries.ControllerManager,
		"--kubeconfig="+c.KubeconfigPath,
		"--authentication-kubeconfig="+c.KubeconfigPath,
		"--authorization-kubeconfig="+c.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "kcm-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file="+certs.serviceAccountKey(),
		"--root-ca-file="+certs.caCert(),
		"--service-cluster-ip-range="+serviceClusterIPRange,
		// Bind provisioned volumes within seconds rather than the default 15 s.
		"--pvclaimbinder-sync-period=2s",
		// A node whose kubelet is frozen for a minute (a test's) stays
		// Ready: two minutes without its lease, not the default 50 s.
		"--node-monitor-grace-period=2m",
		"--profiling=false",
	)
}

func (c *Cluster) startScheduler(port int) error {
	return c.start("kube-scheduler", c.cfg.Binaries.Scheduler,
		"--kubeconfig="+c.KubeconfigPath,
		"--authentication-kubeconfig="+c.KubeconfigPath,
		"--authorization-kubeconfig="+c.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "scheduler-certs"),
		"--leader-elect=false",
		"--profiling=false",
	)
}

func (c *Cluster) startKwok() error {
	stages, err := filepath.Glob(filepath.Join(c.cfg.Binaries.StagesDir, "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no kwok stages in %s", c.cfg.Binaries.StagesDir)
	}
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		// Fake pods get loopback addresses: whatever tries to reach one (the
		// operator reads every running pod's /status) is refused on this
		// machine instead of sending traffic to a private range.
		"--cidr=" + kwokPodCIDR,
		"--node-lease-duration-seconds=40",
		"--server-address=",
	}
	for _, stage := range stages {
		args = append(args, "--config="+stage)
	}
	return c.start("kwok", c.cfg.Binaries.Kwok, args...)
}
