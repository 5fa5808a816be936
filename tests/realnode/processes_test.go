package realnode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// hostProcess is a process of a pod's containers as the host sees it.
type hostProcess struct {
	pid, ppid int
	comm      string
}

// podProcesses lists the host's processes that run in the pod's cgroup.
func podProcesses(pod *corev1.Pod) []hostProcess {
	entries, _ := os.ReadDir("/proc")
	marker := "pod" + string(pod.UID)
	var found []hostProcess
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		cgroup, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cgroup), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, close := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(string(stat)[close+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		found = append(found, hostProcess{pid: pid, ppid: ppid, comm: string(stat)[open+1 : close]})
	}
	return found
}

// podProcess is the host PID of the pod's process named comm whose parent
// is named parent.
func podProcess(g Gomega, namespace, name, comm, parent string) int {
	pod, err := clientset.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	processes := podProcesses(pod)
	byPID := map[int]hostProcess{}
	for _, p := range processes {
		byPID[p.pid] = p
	}
	for _, p := range processes {
		if p.comm == comm && byPID[p.ppid].comm == parent {
			return p.pid
		}
	}
	g.Expect(processes).To(ContainElement(HaveField("comm", comm)), "no %s under %s in pod %s", comm, parent, name)
	panic("unreachable: the expectation above fails")
}

// TestFailoverFromProcessFaults fails the primary of a Database of each
// engine (two pods, failover delay 0) in the three ways a pod can go wrong
// while it stays: its engine killed (the instance program exits and the
// kubelet restarts it), its instance program frozen (SIGSTOP: not
// ready, its engine still running on connections opened before: the
// operator deletes its pod before it promotes, so it cannot take writes
// the new primary never sees), and (PostgreSQL) every process of the pod
// killed at once, as the node's runtime would (the kubelet starts a new
// sandbox). Each time the replica is promoted, writes
// through -rw resume, at most the last moment's rows are lost, and the
// former primary comes back as a replica; the longest write pause is
// printed.
func TestFailoverFromProcessFaults(t *testing.T) {
	besideOtherTests(t, 1000) // two small pods at a time
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			testProcessFaults(t, tc.replicationSQL, tc.createWrites, tc.insert)
		})
	}
}

func testProcessFaults(t *testing.T, tc replicationSQL, createWrites, insert string) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-faults-" + string(tc.engine)
	db := twoPodDatabase(t, g, ns, tc, createWrites, nil)
	engineProcess := "postgres"
	if tc.engine == dbpilotv1alpha1.EngineMariaDB {
		engineProcess = "mariadbd"
	}

	fault := func(what, primary, replica string, inject func() func()) {
		w := startWriter(db, insert, 1+1_000_000*len(what))
		defer w.finish()
		time.Sleep(2 * time.Second)
		heal := inject()
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			g.Expect(db.Status.CurrentPrimary).To(Equal(replica))
		}, 2*time.Minute, 250*time.Millisecond).Should(Succeed(), "%s: the replica is promoted", what)
		w.writesResume(g, 20)
		heal()
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(primary)))
		}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), "%s: the former primary rejoins as a replica", what)
		result := w.finish()
		primarySession, err := connectApp(ctx, db)
		g.Expect(err).NotTo(HaveOccurred())
		defer primarySession.close()
		lost := lostRows(g, primarySession, result.acknowledged)
		t.Logf("failover %s %s write_unavailable_s=%.1f rows_acknowledged=%d rows_lost_async=%d",
			tc.engine, what, result.longestGap.Seconds(), len(result.acknowledged), lost)
		// Asynchronous replication may lose the last moment's rows (a
		// killed engine's, however many its replica had not received: the
		// dead engine cannot take writes after the promotion). A former
		// primary whose engine still ran and kept taking writes after the
		// promotion (split brain) loses seconds of them.
		if what == "instance-program-frozen" {
			g.Expect(lost).To(BeNumerically("<", 10), "%s: the former primary took writes after the promotion", what)
		}
	}

	fault("engine-killed", db.PodName(0), db.PodName(1), func() func() {
		pid := podProcess(g, ns, db.PodName(0), engineProcess, "instance")
		g.Expect(pid).To(BeNumerically(">", 1))
		g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		return func() {}
	})
	fault("instance-program-frozen", db.PodName(1), db.PodName(0), func() func() {
		pid := podProcess(g, ns, db.PodName(1), "instance", "")
		g.Expect(pid).To(BeNumerically(">", 1))
		g.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
		thaw := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
		t.Cleanup(thaw)
		return thaw
	})
	lastFailover := fmt.Sprintf("%s replaced %s", db.PodName(0), db.PodName(1))
	// The node's kill is the same for either engine; once keeps the
	// suite's time.
	if tc.engine == dbpilotv1alpha1.EnginePostgres {
		podKilled(ctx, g, fault, ns, db)
		lastFailover = fmt.Sprintf("%s replaced %s", db.PodName(1), db.PodName(0))
	}
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailedOver)).To(ContainSubstring(lastFailover))
}

// podKilled fails the primary, pod 0, as the node's runtime (or the
// kernel) kills a pod: every process of it, its sandbox's included, at
// once; the kubelet then starts a new sandbox and new containers for it.
func podKilled(ctx context.Context, g Gomega, fault func(what, primary, replica string, inject func() func()), ns string, db *dbpilotv1alpha1.Database) {
	fault("pod-killed-on-the-node", db.PodName(0), db.PodName(1), func() func() {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(0), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		sandbox := false
		for _, p := range podProcesses(pod) {
			sandbox = sandbox || p.comm == "pause"
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		g.Expect(sandbox).To(BeTrue(), "the pod's sandbox process was among those killed")
		return func() {}
	})
}

// expectUnprivilegedProcesses checks, from the host, every process of the
// Database's pods but the sandbox's: none runs as root (real or effective
// user), and each sees its root filesystem read-only.
func expectUnprivilegedProcesses(g Gomega, db *dbpilotv1alpha1.Database) {
	expectUnprivilegedPods(g, db.Namespace, db.SelectorLabels())
}

// expectUnprivilegedPods checks every process (but the sandbox's pause) of
// the pods the labels select on the host: none runs as root, and each sees
// its root filesystem read-only.
func expectUnprivilegedPods(g Gomega, namespace string, selector map[string]string) {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingLabels(selector))).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty())
	for i := range pods.Items {
		checked := 0
		for _, p := range podProcesses(&pods.Items[i]) {
			if p.comm == "pause" {
				continue
			}
			status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "status"))
			if err != nil {
				continue // exited meanwhile
			}
			for _, line := range strings.Split(string(status), "\n") {
				if fields := strings.Fields(line); len(fields) >= 3 && fields[0] == "Uid:" {
					g.Expect(fields[1]).NotTo(Equal("0"), "%s (pid %d) of %s runs as root", p.comm, p.pid, pods.Items[i].Name)
					g.Expect(fields[2]).NotTo(Equal("0"), "%s (pid %d) of %s runs as effective root", p.comm, p.pid, pods.Items[i].Name)
				}
			}
			options, alive := rootMountOptions(p.pid)
			if !alive {
				continue // exited meanwhile (a PostgreSQL backend's session ended)
			}
			g.Expect(options).To(ContainElement("ro"), "%s (pid %d) of %s: root filesystem not read-only", p.comm, p.pid, pods.Items[i].Name)
			checked++
		}
		g.Expect(checked).To(BeNumerically(">", 0), "no process of %s found on the host", pods.Items[i].Name)
	}
}

// rootMountOptions are the mount options of "/" as the process sees it;
// false when the process is gone (reading the file of one that is exiting
// fails with EINVAL).
func rootMountOptions(pid int) ([]string, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return nil, false
	}
	// id parent major:minor root mountpoint options ...
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 6 && fields[4] == "/" {
			return strings.Split(fields[5], ","), true
		}
	}
	return nil, true
}
