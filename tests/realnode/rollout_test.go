package realnode_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestRolloutNeverRestartsThePrimary changes a Database of each engine
// under a continuous writer. First, with three pods, a change beyond the
// tier (backups turned on, which mounts their volume, and the application
// user's client certificate required, which its writer presents from the
// start and which the password alone then lacks) rolls the pods: the
// replicas restart first, one at a time, the primary is handed over to an
// updated replica by a switchover, and only then does the former primary's
// pod restart, as a replica. Then, scaled to two pods (the node's 2 CPUs
// hold two medium pods), the tier goes from small to medium: the pods are
// resized in place, none restarts, and the engine takes the new settings
// online (MariaDB's buffer pool, also back to small; PostgreSQL reloads and
// names what waits for a restart, then rolls back to small, primary last).
// At least one pod is ready throughout, no acknowledged row is lost, and
// the longest write pause is printed. Then
// the primary is fenced (its engine stopped, out of the -rw Service, not
// failed over) and unfenced.
func TestRolloutNeverRestartsThePrimary(t *testing.T) {
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			testRollout(t, tc.replicationSQL, tc.createWrites, tc.insert)
		})
	}
}

func testRollout(t *testing.T, tc replicationSQL, createWrites, insert string) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-rollout-" + string(tc.engine)
	// Failover delay 0: a rollout that restarted the primary would fail
	// it over.
	db := writableDatabase(t, g, ns, tc, createWrites, 3, nil)

	// Watch readiness while the writer writes.
	selector := labels.FormatLabels(db.SelectorLabels())
	var noneReady atomic.Int32
	watching := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-watching:
				return
			case <-time.After(250 * time.Millisecond):
			}
			pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			ready := 0
			for i := range pods.Items {
				if podIsReady(&pods.Items[i]) {
					ready++
				}
			}
			if ready == 0 {
				noneReady.Add(1)
			}
		}
	}()
	w := startWriter(db, insert, 1)
	defer w.finish()
	time.Sleep(2 * time.Second)

	// A change beyond the tier: rolled, primary last.
	before := podsByName(g, db)
	started := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "0 0 1 1 *", Retention: 1}
		// The writer presents the client certificate from the start.
		db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{ClientCertificateRequired: true}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
		g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, 1, 0, 2)))
		expectRolledOut(g, db, 3)
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return eventNotes(ns) })
	for name, pod := range podsByName(g, db) {
		g.Expect(pod.UID).NotTo(Equal(before[name].UID), "pod %s was not rolled", name)
	}
	took := time.Since(started)
	w.writesResume(g, 20)
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonSwitchingOver)).To(ContainSubstring("a rollout is about to restart the primary's pod"))
	// The primary the switchover promoted requires it (MariaDB's replica
	// had its former primary's users).
	expectPasswordAloneRefused(g, db)
	rolledGap := w.longestGapSoFar()

	// Two pods, then the tier: resized in place, up (and MariaDB down
	// again).
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](2) })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, 1, 0)))
		g.Expect(podsByName(g, db)).To(HaveLen(2))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	tierInPlace(t, g, db, tc, dbpilotv1alpha1.TierMedium, 1024)
	if tc.engine == dbpilotv1alpha1.EngineMariaDB {
		tierInPlace(t, g, db, tc, dbpilotv1alpha1.TierSmall, 512)
	} else {
		// PostgreSQL rolls to a smaller tier (its shared_buffers would not
		// fit), primary-safe, and the restarts apply what was pending.
		tierRolled(t, g, db, dbpilotv1alpha1.TierSmall)
	}
	restartRequested(t, g, db)
	w.writesResume(g, 20)
	close(watching)
	<-watched
	result := w.finish()

	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("rollout %s rollout_s=%.1f write_unavailable_s=%.1f (the whole run, tier changes included: %.1f) rows_acknowledged=%d rows_lost=%d",
		tc.engine, took.Seconds(), rolledGap.Seconds(), result.longestGap.Seconds(), len(result.acknowledged), lost)
	g.Expect(lost).To(BeZero())
	g.Expect(noneReady.Load()).To(BeZero(), "a moment without a ready pod")
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailingOver)).To(BeEmpty(), "the rollout caused a failover")
	// Every pod carries the configuration it runs with, the resized ones
	// too.
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	g.Expect(err).NotTo(HaveOccurred())
	for _, pod := range pods.Items {
		g.Expect(pod.Annotations).To(HaveKey(dbpilotv1alpha1.AnnotationConfigChecksum))
		g.Expect(pod.Annotations[dbpilotv1alpha1.AnnotationConfigChecksum]).To(Equal(desired.ConfigChecksum(db)), pod.Name)
	}

	// Fencing the primary stops its engine and takes it out of the -rw
	// Service without a failover (delay 0) or a deleted object; unfencing
	// brings it back as the primary.
	fence := func(value string) {
		patch := []byte(`{"metadata":{"annotations":{"` + dbpilotv1alpha1.AnnotationFenced + `":` + value + `}}}`)
		_, err := clientset.CoreV1().Pods(ns).Patch(ctx, db.PodName(1), types.MergePatchType, patch, metav1.PatchOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	fence(`"true"`)
	g.Eventually(func(g Gomega) {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(1), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RoleFenced))
		g.Expect(podIsReady(pod)).To(BeFalse())
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ContainElement(HaveField("Fenced", BeTrue())))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	_, err = connectApp(ctx, db)
	g.Expect(err).To(HaveOccurred(), "the -rw Service reaches a fenced primary")
	g.Consistently(func(g Gomega) {
		g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailingOver)).To(BeEmpty())
	}, 15*time.Second, time.Second).Should(Succeed(), "a fenced primary was failed over")
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFenced)).To(ContainSubstring(db.PodName(1)))
	fence(`null`)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(db.PodName(1)))
		g.Expect(available(db)).To(BeTrue())
		writer, err := connectApp(ctx, db)
		g.Expect(err).NotTo(HaveOccurred())
		defer writer.close()
		g.Expect(writer.exec(ctx, fmt.Sprintf(insert, 1_000_000))).To(Succeed())
	}, 2*time.Minute, time.Second).Should(Succeed())
}

// podsByName are the Database's pods.
func podsByName(g Gomega, db *dbpilotv1alpha1.Database) map[string]corev1.Pod {
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]corev1.Pod{}
	for _, pod := range pods.Items {
		byName[pod.Name] = pod
	}
	return byName
}

// restartCount sums the restarts of the pod's containers.
func restartCount(pod corev1.Pod) int32 {
	n := int32(0)
	for _, status := range pod.Status.ContainerStatuses {
		n += status.RestartCount
	}
	return n
}

// runningResources are the database container's limits as the kubelet
// reports them applied.
func runningResources(pod corev1.Pod) corev1.ResourceList {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == desired.DatabaseContainerName && status.Resources != nil {
			return corev1.ResourceList{corev1.ResourceCPU: status.Resources.Limits.Cpu().DeepCopy(), corev1.ResourceMemory: status.Resources.Limits.Memory().DeepCopy()}
		}
	}
	return nil
}

// tierInPlace changes the tier of the two-pod Database and expects its pods
// resized in place: the same pods, no container restarted, the new CPU and
// memory applied by the kubelet, no switchover; then the engine follows its
// configuration once the kubelet has updated the mounted file: MariaDB's
// buffer pool is bufferPoolMiB, PostgreSQL reports shared_buffers pending
// a restart.
func tierInPlace(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, tier dbpilotv1alpha1.Tier, bufferPoolMiB int) {
	t.Helper()
	ctx := context.Background()
	before := podsByName(g, db)
	primary := db.Status.CurrentPrimary
	switchovers := eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonSwitchingOver)
	changed := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = tier })
	want := desired.DatabaseResources(db)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
		g.Expect(db.Status.Tier).To(Equal(tier))
		g.Expect(expectRolledOut(g, db, 2).Annotations).NotTo(HaveKey(desired.AnnotationResizingInPlace))
		for name, pod := range podsByName(g, db) {
			g.Expect(pod.UID).To(Equal(before[name].UID), "pod %s was recreated", name)
			g.Expect(restartCount(pod)).To(Equal(restartCount(before[name])), "pod %s restarted", name)
			g.Expect(pod.Annotations).To(HaveKeyWithValue(desired.AnnotationStartedTier, string(dbpilotv1alpha1.TierSmall)), "pod %s", name)
			running := runningResources(pod)
			g.Expect(running.Cpu().Cmp(*want.Cpu())).To(BeZero(), "pod %s runs with %v", name, running)
			g.Expect(running.Memory().Cmp(*want.Memory())).To(BeZero(), "pod %s runs with %v", name, running)
		}
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string {
		return fmt.Sprintf("pods resized in place to %s; events:\n%s", tier, eventNotes(db.Namespace))
	})
	resized := time.Since(changed)
	g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonTierChanged)).To(ContainSubstring("resized in place to " + string(tier)))
	g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonSwitchingOver)).To(Equal(switchovers), "a resize in place switched over")
	g.Expect(db.Status.CurrentPrimary).To(Equal(primary), "the primary moved")
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(HaveLen(2))
		for _, instance := range db.Status.Instances {
			if tc.engine == dbpilotv1alpha1.EnginePostgres {
				g.Expect(instance.PendingRestart).To(ContainElement("shared_buffers"), instance.Name)
				continue
			}
			g.Expect(bufferPoolOf(g, db, instance.Name)).To(Equal(bufferPoolMiB), instance.Name)
		}
	}, 3*time.Minute, 2*time.Second).Should(Succeed(), "the engine's settings follow the tier %s", tier)
	t.Logf("resize %s to %s in place: pods resized %.1fs after the change, the engine's settings followed %.1fs after it",
		tc.engine, tier, resized.Seconds(), time.Since(changed).Seconds())
}

// tierRolled changes the tier of the two-pod Database, whose primary is
// ordinal 1, and expects its pods rolled with the primary restarted last:
// every pod new, the primary back on ordinal 1 after the switchovers, no
// instance with a setting pending a restart.
func tierRolled(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tier dbpilotv1alpha1.Tier) {
	t.Helper()
	ctx := context.Background()
	before := podsByName(g, db)
	changed := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = tier })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
		g.Expect(db.Status.Tier).To(Equal(tier))
		g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, 1, 0)))
		expectRolledOut(g, db, 2)
		for name, pod := range podsByName(g, db) {
			g.Expect(pod.UID).NotTo(Equal(before[name].UID), "pod %s was not rolled", name)
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return eventNotes(db.Namespace) })
	t.Logf("tier %s %s: rolled, primary last, in %.1fs", db.Spec.Engine, tier, time.Since(changed).Seconds())
}

// restartRequested asks the two-pod Database, its primary on ordinal 1,
// for a restart (dbpilot.io/restart) and expects every pod recreated with
// the primary handed over before its pod restarts: the roll ends with the
// primary back on ordinal 1 and ordinal 0 streaming from it.
func restartRequested(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database) {
	t.Helper()
	ctx := context.Background()
	before := podsByName(g, db)
	asked := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
		if db.Annotations == nil {
			db.Annotations = map[string]string{}
		}
		db.Annotations[dbpilotv1alpha1.AnnotationRestart] = asked.UTC().Format(time.RFC3339)
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, 1, 0)))
		expectRolledOut(g, db, 2)
		for name, pod := range podsByName(g, db) {
			g.Expect(pod.UID).NotTo(Equal(before[name].UID), "pod %s was not restarted", name)
			g.Expect(pod.Annotations).To(HaveKeyWithValue(dbpilotv1alpha1.AnnotationRestart, db.Annotations[dbpilotv1alpha1.AnnotationRestart]))
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return eventNotes(db.Namespace) })
	// The primary restarted in place would have been failed over (delay
	// 0), which the test rules out at its end, as it does a moment with
	// no ready pod and a lost row.
	g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonRestarting)).To(ContainSubstring("after a switchover"))
	t.Logf("restart %s: both pods restarted, primary handed over first, in %.1fs", db.Spec.Engine, time.Since(asked).Seconds())
}

// servingFrom is the status of the Database's instances serving from
// ordinal primary, the others streaming replicas with no lag.
func servingFrom(db *dbpilotv1alpha1.Database, primary int, replicas ...int) []dbpilotv1alpha1.InstanceStatus {
	want := []dbpilotv1alpha1.InstanceStatus{{Name: db.PodName(primary), Role: "primary", Ready: true}}
	for _, i := range replicas {
		want = append(want, dbpilotv1alpha1.InstanceStatus{Name: db.PodName(i), Role: "replica", Ready: true, Replicating: true, LagSeconds: ptr.To[int64](0)})
	}
	return want
}

// expectRolledOut expects the Database's StatefulSet to run its template
// on all of its pods pods, and returns it.
func expectRolledOut(g Gomega, db *dbpilotv1alpha1.Database, pods int32) *appsv1.StatefulSet {
	sts, err := clientset.AppsV1().StatefulSets(db.Namespace).Get(context.Background(), db.StatefulSetName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sts.Status.UpdatedReplicas).To(Equal(pods))
	g.Expect(sts.Status.CurrentRevision).To(Equal(sts.Status.UpdateRevision))
	return sts
}

// bufferPoolOf reads the InnoDB buffer pool size, in MiB, of a MariaDB pod,
// primary or replica.
func bufferPoolOf(g Gomega, db *dbpilotv1alpha1.Database, pod string) int {
	ctx := context.Background()
	session, err := connectAppToPod(ctx, db, pod)
	g.Expect(err).NotTo(HaveOccurred())
	defer session.close()
	mib, err := session.queryInt(ctx, "SELECT @@innodb_buffer_pool_size DIV 1048576")
	g.Expect(err).NotTo(HaveOccurred())
	return mib
}

// eventNotes lists the namespace's Events (reason, object, note), for a
// failure's message.
func eventNotes(namespace string) string {
	events, err := clientset.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, e := range events.Items {
		lines = append(lines, fmt.Sprintf("%s %s %s/%s: %s", e.CreationTimestamp.Format(time.TimeOnly), e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
