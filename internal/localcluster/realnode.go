package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The real node's network: a bridge of its own whose address is the node's
// IP (and the address the API server advertises), pods on its subnet, nothing
// masqueraded or forwarded off it.
const (
	// RealNodeName is the real node's name (and kubernetes.io/hostname).
	RealNodeName = "dbpilot-node"
	// BridgeIP is the node's address on its bridge.
	BridgeIP       = "10.244.0.1"
	bridgeName     = "dbpilot0"
	podSubnet      = "10.244.0.0/24"
	forwardComment = "dbpilot-realnode: pods stay on the bridge"
	// ClusterDomain is the DNS domain of Services and pods.
	ClusterDomain = "cluster.local"
)

// realNode is one kubelet with containerd, runc, the CNI bridge and
// kube-proxy, on this machine.
type realNode struct {
	dir      string
	lock     *hostLock
	record   *hostRecord
	registry *registry
	procs    []*process
}

// RealNodeAvailable says why a real node cannot run here, or nil: it needs
// root on Linux and the Debian packages containerd, runc,
// containernetworking-plugins and iptables.
func RealNodeAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("a real node needs root (containerd, network namespaces, cgroups)")
	}
	var missing []string
	for _, tool := range []string{"containerd", "runc", "iptables", "iptables-save", "ip6tables-save", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if !fileExists(filepath.Join(cniBinDir, plugin)) {
			missing = append(missing, "CNI plugin "+plugin)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a real node needs %s (make deps installs them)", strings.Join(missing, ", "))
	}
	return nil
}

const cniBinDir = "/usr/lib/cni"

// RealNodeOptional reports whether a suite that needs a real node may skip
// where none can run: DBPILOT_REALNODE=skip says so (`make test
// REALNODE=skip`). By default such a suite fails there, so that a machine
// that cannot run a real node never passes it without running it.
func RealNodeOptional() bool { return os.Getenv("DBPILOT_REALNODE") == "skip" }

// prepareRealNode takes the machine's lock, undoes what a crashed run left,
// records the state the node will change and brings up its bridge. It runs
// before the API server starts, which binds to the bridge.
func prepareRealNode(dir string) (n *realNode, err error) {
	if err := RealNodeAvailable(); err != nil {
		return nil, err
	}
	lock, err := lockHost()
	if err != nil {
		return nil, err
	}
	n = &realNode{dir: dir, lock: lock}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.stop())
		}
	}()
	if leftover, err := loadHostRecord(); err != nil {
		return n, err
	} else if leftover != nil {
		if err := leftover.restore(); err != nil {
			return n, fmt.Errorf("cleaning up after an earlier real node: %w", err)
		}
	}
	for _, sub := range []string{"run", "containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volumes", "certs.d"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return n, err
		}
	}
	n.record, err = recordHost(dir, bridgeName, n.containerdSocket())
	if err != nil {
		return n, err
	}
	if err := n.record.save(); err != nil {
		return n, err
	}
	return n, n.networkUp()
}

func (n *realNode) containerdSocket() string { return filepath.Join(n.dir, "run", "containerd.sock") }

// networkUp creates the bridge with the node's address, the CNI
// configuration, and a rule that drops whatever pods send off the bridge.
func (n *realNode) networkUp() error {
	steps := [][]string{
		{"ip", "link", "add", bridgeName, "type", "bridge"},
		{"ip", "addr", "add", BridgeIP + "/24", "dev", bridgeName},
		{"ip", "link", "set", bridgeName, "up"},
		{"iptables", "-I", "FORWARD", "-i", bridgeName, "!", "-o", bridgeName, "-m", "comment", "--comment", forwardComment, "-j", "DROP"},
	}
	for _, step := range steps {
		if out, err := exec.Command(step[0], step[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(step, " "), err, out)
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "dbpilot",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q,
              "ranges": [[{"subnet": %q, "gateway": %q}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
`, bridgeName, filepath.Join(n.dir, "cni", "ipam"), podSubnet, BridgeIP)
	return os.WriteFile(filepath.Join(n.dir, "cni", "net.d", "10-dbpilot.conflist"), []byte(conflist), 0o644)
}

// startRealNode starts the registry, containerd, the kubelet and kube-proxy
// once the control plane runs, and waits for the node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context, certs pki, apiPort int) error {
	n := c.node
	var err error
	if n.registry, err = startRegistry(BridgeIP, filepath.Join(n.dir, "registry")); err != nil {
		return err
	}
	if err := n.registry.writeMirrors(filepath.Join(n.dir, "certs.d")); err != nil {
		return err
	}
	if err := pushPauseImage(ctx, n.registry, c.cfg.ImageCacheDir); err != nil {
		return err
	}
	if err := certs.ensureNode(RealNodeName, BridgeIP); err != nil {
		return err
	}
	kubeletKubeconfig := filepath.Join(n.dir, "kubelet.kubeconfig")
	if err := writeClientKubeconfig(kubeletKubeconfig, certs, c.apiHost, apiPort, certs.nodeClientCert(), certs.nodeClientKey()); err != nil {
		return err
	}

	c.cfg.Progress("containerd")
	configPath := filepath.Join(n.dir, "containerd", "config.toml")
	if err := os.WriteFile(configPath, []byte(n.containerdConfig()), 0o644); err != nil {
		return err
	}
	containerd, err := n.start(c.LogDir(), "containerd", "containerd", "--config", configPath)
	if err != nil {
		return err
	}
	if err := poll(ctx, containerd, 30*time.Second, func(context.Context) (bool, error) {
		return fileExists(n.containerdSocket()), nil
	}); err != nil {
		return fmt.Errorf("containerd did not open its socket: %w", err)
	}

	c.cfg.Progress("kubelet")
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	kubeletConfig := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(kubeletConfig, []byte(n.kubeletConfig(certs, ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	kubelet, err := n.start(c.LogDir(), "kubelet", c.cfg.Binaries.Kubelet,
		"--config="+kubeletConfig,
		"--kubeconfig="+kubeletKubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--hostname-override="+RealNodeName,
		"--node-ip="+BridgeIP,
		"--node-labels=topology.kubernetes.io/zone=zone-a",
		// cAdvisor finds the containers' pod, namespace and container
		// names through containerd's API, at its default socket unless
		// told (this flag has no configuration-file field).
		"--containerd="+n.containerdSocket(),
	)
	if err != nil {
		return err
	}

	c.cfg.Progress("kube-proxy")
	proxyConfig := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(proxyConfig, []byte(kubeProxyConfig(c.KubeconfigPath, ports[2], ports[3])), 0o644); err != nil {
		return err
	}
	if _, err := n.start(c.LogDir(), "kube-proxy", c.cfg.Binaries.KubeProxy, "--config="+proxyConfig); err != nil {
		return err
	}

	// CoreDNS runs on the node's address, as the cluster's DNS server: it
	// answers for Services and pods and forwards nothing, so no pod
	// resolves a name outside the cluster.
	c.cfg.Progress("coredns")
	corefile := filepath.Join(n.dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(coreDNSConfig(c.KubeconfigPath)), 0o644); err != nil {
		return err
	}
	if _, err := n.start(c.LogDir(), "coredns", c.cfg.Binaries.CoreDNS, "-conf", corefile); err != nil {
		return err
	}
	if err := n.record.save(); err != nil {
		return err
	}

	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	if err := poll(ctx, kubelet, 90*time.Second, func(ctx context.Context) (bool, error) {
		node, err := clientset.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("real node not Ready: %w", err)
	}
	return nil
}

// start runs one of the node's processes and records its process group, so
// a later run can kill it if this one crashes.
func (n *realNode) start(logDir, name, binary string, args ...string) (*process, error) {
	p, err := startProcess(name, binary, args, logDir)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	group, err := recordGroup(p.pid())
	if err != nil {
		return p, fmt.Errorf("recording the process group of %s: %w", name, err)
	}
	n.record.ProcessGroups = append(n.record.ProcessGroups, group)
	return p, n.record.save()
}

func (n *realNode) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  # runc cannot raise oom_score_adj without CAP_SYS_RESOURCE.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[9]q
    conf_dir = %[10]q
`,
		filepath.Join(n.dir, "containerd", "root"),
		filepath.Join(n.dir, "containerd", "state"),
		n.containerdSocket(),
		n.containerdSocket()+".ttrpc",
		filepath.Join(n.dir, "containerd", "opt"),
		PauseImage,
		filepath.Join(n.dir, "containerd", "runc"),
		filepath.Join(n.dir, "certs.d"),
		cniBinDir,
		filepath.Join(n.dir, "cni", "net.d"),
	)
}

// kubeletConfig is the node's kubelet configuration. Its pods sync every
// 10 s rather than every minute, so a changed Secret or ConfigMap reaches
// their mounted files within seconds: the waits the operator makes for
// them (a certificate authority's staged change, a new setting) are the
// same, only shorter.
func (n *realNode) kubeletConfig(certs pki, port, healthzPort int) string {
	socket := "unix://" + n.containerdSocket()
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: %[1]s
imageServiceEndpoint: %[1]s
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
tlsCertFile: %[5]s
tlsPrivateKeyFile: %[6]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[7]s}
authorization: {mode: AlwaysAllow}
clusterDomain: %[9]s
clusterDNS: [%[2]s]
resolvConf: /etc/resolv.conf
staticPodPath: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%%", "imagefs.available": "1%%"}
nodeStatusUpdateFrequency: 10s
syncFrequency: 10s
podLogsDir: %[8]s
`, socket, BridgeIP, port, healthzPort, certs.nodeServingCert(), certs.nodeServingKey(), certs.caCert(),
		filepath.Join(n.dir, "pod-logs"), ClusterDomain)
}

func coreDNSConfig(kubeconfig string) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`, BridgeIP, ClusterDomain, kubeconfig)
}

func kubeProxyConfig(kubeconfig string, healthzPort, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
nodePortAddresses: ["%s/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, masqueradeAll: false}
`, kubeconfig, RealNodeName, podSubnet, healthzPort, metricsPort, BridgeIP)
}

// stop stops the node's processes (the kubelet first, so it restarts
// nothing), removes every pod sandbox through containerd so the CNI plugins
// release their addresses, then puts the machine back as it was.
func (n *realNode) stop() error {
	var errs []error
	byName := map[string]*process{}
	for _, p := range n.procs {
		byName[p.name] = p
	}
	if p := byName["kubelet"]; p != nil {
		errs = append(errs, p.stop(stopGrace))
	}
	if byName["containerd"] != nil && byName["containerd"].running() {
		errs = append(errs, removeSandboxes(n.containerdSocket()))
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		if n.procs[i].name != "kubelet" {
			errs = append(errs, n.procs[i].stop(stopGrace))
		}
	}
	if n.registry != nil {
		errs = append(errs, n.registry.stop())
	}
	if n.record != nil {
		errs = append(errs, n.record.restore())
	}
	if n.lock != nil {
		n.lock.release()
	}
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every pod sandbox containerd runs.
func removeSandboxes(socket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rt, err := dialRuntime(ctx, socket)
	if err != nil {
		return err
	}
	defer rt.close()
	return rt.removeAllSandboxes(ctx)
}
