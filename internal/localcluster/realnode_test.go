package localcluster_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// machineState is what the real node may change on the machine, read here
// with the machine's own tools rather than the harness's record, so the test
// judges the restore independently.
type machineState struct {
	Links    []string
	IPTables string
	Sysctls  map[string]string
	Mounts   []string
	Paths    map[string]bool
	Cgroups  []string
}

var counters = regexp.MustCompile(`\[\d+:\d+\]`)

func readMachineState(t *testing.T) machineState {
	t.Helper()
	s := machineState{Sysctls: map[string]string{}, Paths: map[string]bool{}}
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatalf("ip link: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 {
			s.Links = append(s.Links, strings.Split(strings.TrimSuffix(fields[1], ":"), "@")[0])
		}
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			t.Fatalf("%s: %v", save, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "#") && strings.TrimSpace(line) != "" {
				s.IPTables += counters.ReplaceAllString(line, "") + "\n"
			}
		}
	}
	for _, key := range []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory", "vm/panic_on_oom",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet",
		"net/bridge/bridge-nf-call-iptables"} {
		if data, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			s.Sysctls[key] = strings.TrimSpace(string(data))
		}
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if fields := strings.Fields(line); len(fields) > 2 {
			s.Mounts = append(s.Mounts, fields[1]+" "+fields[2])
		}
	}
	sort.Strings(s.Mounts)
	for _, p := range []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers"} {
		_, err := os.Stat(p)
		s.Paths[p] = err == nil
	}
	for _, pattern := range []string{"/sys/fs/cgroup/*/kubepods", "/sys/fs/cgroup/*/k8s.io", "/sys/fs/cgroup/kubepods", "/sys/fs/cgroup/k8s.io"} {
		found, _ := filepath.Glob(pattern)
		s.Cgroups = append(s.Cgroups, found...)
	}
	return s
}

// processesMentioning lists processes whose command line contains s.
func processesMentioning(s string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), s) {
			found = append(found, p+": "+strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return found
}

// TestRealNodeRunsPodsAndLeavesNothing starts the control plane with a real
// node, runs a pod whose image the local registry serves under its real
// name, and checks that Stop puts the machine back exactly as it was:
// processes, mounts, the bridge, iptables rules, sysctls, cgroups and paths.
func TestRealNodeRunsPodsAndLeavesNothing(t *testing.T) {
	if err := localcluster.RealNodeAvailable(); err != nil {
		if localcluster.RealNodeOptional() {
			t.Skipf("no real node on this machine: %v", err)
		}
		t.Fatalf("no real node on this machine: %v (DBPILOT_REALNODE=skip skips this test)", err)
	}
	g := NewWithT(t)
	before := readMachineState(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{RealNode: true})
	if err != nil {
		t.Fatalf("starting control plane with a real node: %v", err)
	}
	t.Logf("control plane and real node up in %.1fs", time.Since(start).Seconds())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.StopKeepingLogs()
		}
	})
	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() error {
		_, err := clientset.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}, 30*time.Second).Should(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "sleep", Image: localcluster.PauseImage, ImagePullPolicy: corev1.PullAlways,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	_, err = clientset.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string {
		got, err := clientset.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(got.Status.Phase) + " " + got.Status.PodIP
	}, 2*time.Minute, 200*time.Millisecond).Should(MatchRegexp(`^Running 10\.244\.0\.\d+$`))
	got, err := clientset.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Spec.NodeName).To(Equal(localcluster.RealNodeName))

	// The cluster's DNS answers for Services on the node's address.
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(localcluster.BridgeIP, "53"))
	}}
	g.Eventually(func() ([]string, error) {
		return resolver.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
	}, 30*time.Second, 200*time.Millisecond).Should(Equal([]string{"10.96.0.1"}))

	during := readMachineState(t)
	g.Expect(during.Links).To(ContainElement("dbpilot0"), "the node's bridge is up while it runs")
	g.Expect(processesMentioning(c.Dir)).NotTo(BeEmpty(), "the node's processes run from its directory")

	stopped = true
	g.Expect(c.Stop()).To(Succeed())
	g.Expect(c.CheckStopped()).To(Succeed())
	g.Expect(processesMentioning(c.Dir)).To(BeEmpty(), "no process of the node is left (shims included)")
	after := readMachineState(t)
	g.Expect(after.Links).To(Equal(before.Links), "network links")
	g.Expect(after.IPTables).To(Equal(before.IPTables), "iptables and ip6tables rules")
	g.Expect(after.Sysctls).To(Equal(before.Sysctls), "sysctls")
	g.Expect(after.Mounts).To(Equal(before.Mounts), "mounts")
	g.Expect(after.Paths).To(Equal(before.Paths), "machine paths")
	g.Expect(after.Cgroups).To(Equal(before.Cgroups), "cgroups")
	_, err = os.Stat(c.Dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the state directory is removed")
}
