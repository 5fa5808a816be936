package realnode_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestSynchronousFailoverReclonesADivergedPrimary makes, on purpose, the
// state a synchronous MariaDB failover reaches by chance: the primary has a
// transaction in its binary log that its replica never received (the
// replica's I/O thread is stopped while a commit waits for its
// acknowledgement), then the primary's pod is killed. The replica is promoted without that
// transaction, so the former primary cannot rejoin by GTID and must be
// cloned again, while the new primary, with no replica, holds every commit
// until one acknowledges it. The clone must still be taken, the former
// primary must come back as a replica, and every commit the writer saw
// acknowledged must be on both; the transaction never acknowledged is on
// neither.
func TestSynchronousFailoverReclonesADivergedPrimary(t *testing.T) {
	besideOtherTests(t, 1000) // two small pods
	g := NewWithT(t)
	ctx := context.Background()
	tc := failoverEngines[1]
	g.Expect(tc.engine).To(Equal(dbpilotv1alpha1.EngineMariaDB))
	ns := "real-sync-diverged"
	db := twoPodDatabase(t, g, ns, tc.replicationSQL, tc.createWrites, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Replication = &dbpilotv1alpha1.ReplicationSpec{Synchronous: &dbpilotv1alpha1.SynchronousReplication{Count: 1}}
		// The clone and the replication after it over TLS alone.
		db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true}
	})
	former, promoted := db.PodName(0), db.PodName(1)
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(session.exec(ctx, fmt.Sprintf(tc.insert, 1))).To(Succeed())

	// The replica stops receiving; a commit on the primary goes into its
	// binary log and waits for an acknowledgement that never comes.
	mariadbOnPod(g, ns, promoted, "STOP SLAVE IO_THREAD")
	unacknowledged := make(chan error, 1)
	go func() {
		defer session.close()
		unacknowledged <- session.exec(ctx, fmt.Sprintf(tc.insert, 2))
	}()
	time.Sleep(2 * time.Second)
	g.Expect(unacknowledged).NotTo(Receive(), "a commit was acknowledged with no replica receiving")

	// The primary's pod is killed and the replica promoted.
	killed := time.Now()
	g.Expect(clientset.CoreV1().Pods(ns).Delete(ctx, former, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
	g.Eventually(unacknowledged, time.Minute).Should(Receive(HaveOccurred()), "the commit in flight on the killed primary fails")
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(promoted))
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	t.Logf("%s promoted %.1fs after the primary's pod was killed", promoted, time.Since(killed).Seconds())

	// Commits wait until the former primary, cloned again, acknowledges.
	w := startWriter(db, tc.insert, 100)
	t.Cleanup(func() { w.finish() })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(former)))
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed(), "the former primary rejoins as a replica")
	rejoined := time.Since(killed)
	// The clone path: the instance program emptied the diverged data and
	// exited, and the kubelet started it again on an empty volume.
	pod, err := clientset.CoreV1().Pods(ns).Get(ctx, former, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	restarts := int32(0)
	for _, status := range pod.Status.ContainerStatuses {
		restarts += status.RestartCount
	}
	g.Expect(restarts).To(BeNumerically(">", 0), "the former primary rejoined without being cloned again")
	w.writesResume(g, 20)
	result := w.finish()

	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	acknowledged := append([]int{1}, result.acknowledged...)
	g.Expect(lostRows(g, primary, acknowledged)).To(BeZero(), "acknowledged rows lost")
	g.Expect(primary.queryInt(ctx, "SELECT COUNT(*) FROM writes WHERE id = 2")).To(BeZero(), "the transaction never acknowledged came back")
	present, err := primary.queryInt(ctx, tc.countWrites)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) int { return readReplica(g, db, tc.withSum(tc.countWrites), former) },
		time.Minute, 500*time.Millisecond).Should(Equal(present), "the cloned former primary has the new primary's rows")
	t.Logf("diverged former primary cloned again and replicating %.1fs after the kill; %d rows acknowledged meanwhile, longest write pause %.1fs",
		rejoined.Seconds(), len(result.acknowledged), result.longestGap.Seconds())
}

// mariadbOnPod runs statements on a MariaDB pod's engine as the engine's
// own OS user (unix_socket authentication), with the client of the pod's
// image, in the pod's mount namespace.
func mariadbOnPod(g Gomega, ns, pod, statements string) string {
	pid := podProcess(g, ns, pod, "mariadbd", "instance")
	profile, _ := dbpilotv1alpha1.EngineMariaDB.Profile()
	uid := strconv.FormatInt(profile.UserID, 10)
	out, err := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--mount", "--root", "--wd", "--setuid", uid, "--setgid", uid, "--",
		"/usr/bin/mariadb", "--no-defaults", "--socket=/var/run/mysqld/mysqld.sock", "--user=mysql", "-N", "-B", "-e", statements).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s on %s: %s", statements, pod, out)
	return strings.TrimSpace(string(out))
}
