package realnode_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/managerprocess"
)

const (
	// chaosNamespace is watched only by the manager processes of
	// TestOperatorKilledLosesNoCommittedRow, not by the in-process operator.
	chaosNamespace = "real-chaos"
	// realNodeChaosRoundsEnv sets how many times the operations run
	// (default 1; make test-chaos runs more).
	realNodeChaosRoundsEnv = "DBPILOT_REALNODE_CHAOS_ROUNDS"
)

// TestOperatorKilledLosesNoCommittedRow runs the manager binary as two
// processes with leader election, and SIGKILLs one of them every 4-12 s
// (the leader three times in four), restarting it at once, while a
// PostgreSQL Database under a continuous writer through -rw goes through a
// switchover, a scale to three pods and back, a backup on demand, a tier
// change (up: a resize in place where the node reports container
// resources; down: a primary-safe roll, which moves the primary) and a
// switchover back, DBPILOT_REALNODE_CHAOS_ROUNDS times (the tier
// alternates).
// Each operation completes; at the end the Database is Available with two
// ready pods, every acknowledged row is on the primary and on the replica,
// and the test prints the real node's chaos line.
func TestOperatorKilledLosesNoCommittedRow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	restrictedNamespace(t, chaosNamespace)
	dir := t.TempDir()
	binary, err := managerprocess.Build(dir)
	g.Expect(err).NotTo(HaveOccurred())
	// The processes run this test's images, as the Deployment's
	// environment would give them.
	for _, v := range images.Variables() {
		name, value, _ := strings.Cut(v, "=")
		t.Setenv(name, value)
	}
	var slots []*managerprocess.Slot
	for _, name := range []string{"a", "b"} {
		slot := managerprocess.NewSlot(name, binary, dir,
			"--leader-elect", "--leader-election-namespace="+chaosNamespace, "--watch-namespaces="+chaosNamespace,
			"--metrics-bind-address=0", "--health-probe-bind-address=0")
		slot.Kubeconfig = cluster.KubeconfigPath
		g.Expect(slot.Start()).To(Succeed())
		slots = append(slots, slot)
	}
	t.Cleanup(func() {
		for _, s := range slots {
			s.Kill()
			if t.Failed() {
				t.Log(s.LogTail(30))
			}
		}
	})

	tc := failoverEngines[0]
	db := newDatabase(chaosNamespace, "orders", tc.engine, tc.version, 2)
	// Backups on demand only, to the claim dbpilot creates.
	db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "0 0 1 1 *", Retention: 100}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitReadyPods(g, db, 2)
	expectInstances(g, db, 2)
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(session.exec(ctx, tc.createWrites)).To(Succeed())
	session.close()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	stopKilling := make(chan struct{})
	var killer sync.WaitGroup
	var kills, leaderKills atomic.Int32
	killer.Go(func() {
		for {
			select {
			case <-stopKilling:
				return
			case <-time.After(time.Duration(4000+rng.IntN(8000)) * time.Millisecond):
			}
			// The leader three times in four, when one leads.
			victim := slots[rng.IntN(len(slots))]
			for _, s := range slots {
				if s.Leads() && rng.IntN(4) > 0 {
					victim = s
				}
			}
			if victim.Leads() {
				leaderKills.Add(1)
			}
			victim.Kill()
			kills.Add(1)
			if err := victim.Start(); err != nil {
				t.Errorf("restarting manager %s: %v", victim.Name(), err)
				return
			}
		}
	})
	w := startWriter(db, tc.insert, 1)
	defer w.finish()

	started := time.Now()
	ops := 0
	step := func(name string, change func(db *dbpilotv1alpha1.Database), done func(g Gomega, db *dbpilotv1alpha1.Database)) {
		t.Helper()
		begun := time.Now()
		changeDatabase(g, db, change)
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			done(g, db)
		}, 5*time.Minute, time.Second).Should(Succeed(), name)
		ops++
		t.Logf("%s in %.1fs (%d kills so far)", name, time.Since(begun).Seconds(), kills.Load())
	}
	primaryIs := func(name string) func(g Gomega, db *dbpilotv1alpha1.Database) {
		return func(g Gomega, db *dbpilotv1alpha1.Database) {
			g.Expect(db.Status.CurrentPrimary).To(Equal(name))
			g.Expect(db.Annotations).NotTo(HaveKey(dbpilotv1alpha1.AnnotationSwitchoverTo))
		}
	}
	runs := func(pods int32, tier dbpilotv1alpha1.Tier) func(g Gomega, db *dbpilotv1alpha1.Database) {
		return func(g Gomega, db *dbpilotv1alpha1.Database) {
			g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
			g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
			g.Expect(db.Status.ReadyReplicas).To(Equal(pods))
			g.Expect(db.Status.Tier).To(Equal(tier))
			g.Expect(db.Status.Instances).To(HaveLen(int(pods)))
			for _, instance := range db.Status.Instances {
				g.Expect(instance.Ready).To(BeTrue(), "%+v", db.Status.Instances)
			}
		}
	}
	caughtUp := func(name string) {
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(name)))
		}, 3*time.Minute, time.Second).Should(Succeed())
	}
	switchTo := func(name string) func(db *dbpilotv1alpha1.Database) {
		return func(db *dbpilotv1alpha1.Database) {
			if db.Annotations == nil {
				db.Annotations = map[string]string{}
			}
			db.Annotations[dbpilotv1alpha1.AnnotationSwitchoverTo] = name
		}
	}

	// backUp asks for a backup and waits for it to complete.
	backUp := func(name string) {
		t.Helper()
		begun := time.Now()
		backup := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: chaosNamespace, Name: name},
			Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: db.Name}}
		g.Eventually(func() error { return k8sClient.Create(ctx, backup) }, 30*time.Second, time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
			g.Expect(backup.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseCompleted), backup.Status.Message)
		}, 5*time.Minute, time.Second).Should(Succeed(), "backup %s", name)
		ops++
		t.Logf("backup %s (%s from %s) in %.1fs (%d kills so far)", name, backup.Status.Size, backup.Status.Instance,
			time.Since(begun).Seconds(), kills.Load())
	}

	rounds := 1
	if v := os.Getenv(realNodeChaosRoundsEnv); v != "" {
		rounds, err = strconv.Atoi(v)
		g.Expect(err).NotTo(HaveOccurred(), realNodeChaosRoundsEnv)
	}
	// The tier changes move the primary (a roll hands it over, a resize in
	// place does not), so each switchover goes to whichever of ordinals 0
	// and 1 is the replica.
	replica := func() string {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		if db.Status.CurrentPrimary == db.PodName(0) {
			return db.PodName(1)
		}
		return db.PodName(0)
	}
	switchOver := func() {
		t.Helper()
		to := replica()
		caughtUp(to)
		step("switchover to "+to, switchTo(to), primaryIs(to))
	}
	tiers := []dbpilotv1alpha1.Tier{dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium}
	// A round takes under half a minute now, as long as a few kills: more
	// rounds run until the leader has been killed minLeaderKills times,
	// so every run has operations completing across leader changes.
	const minLeaderKills, maxRounds = 2, 8
	round := 0
	for ; round < rounds || (leaderKills.Load() < minLeaderKills && round < maxRounds); round++ {
		// The node's 2 CPUs hold three small pods or two medium ones:
		// scale at small, then change the tier.
		from, to := tiers[round%2], tiers[(round+1)%2]
		if from != dbpilotv1alpha1.TierSmall {
			step("tier "+string(to), func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = to }, runs(2, to))
			from, to = to, from
		}
		switchOver()
		step("scale to 3 pods", func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](3) }, runs(3, from))
		step("scale to 2 pods", func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](2) }, runs(2, from))
		backUp(fmt.Sprintf("chaos-%d", round))
		if round%2 == 0 {
			step("tier "+string(to), func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = to }, runs(2, to))
		}
		switchOver()
	}

	close(stopKilling)
	killer.Wait()
	for _, s := range slots {
		if !s.Alive() {
			g.Expect(s.Start()).To(Succeed())
		}
	}
	w.writesResume(g, 20)
	result := w.finish()
	waitReadyPods(g, db, 2)
	lastReplica := replica()
	caughtUp(lastReplica)
	// Every acknowledged row is on the primary, and reaches the replica.
	rowsMissing := func(pod string) int {
		var session sqlSession
		g.Eventually(func() (err error) {
			session, err = connectAppToPod(ctx, db, pod)
			return err
		}, 30*time.Second, time.Second).Should(Succeed())
		defer session.close()
		return lostRows(g, session, result.acknowledged)
	}
	// Each backup asked for ran once and completed; none was repeated or
	// failed under the kills.
	backups := backupsOf(g, db)
	g.Expect(backups[dbpilotv1alpha1.BackupPhaseCompleted]).To(HaveLen(round), "completed backups: %v", backups)
	g.Expect(backups).To(HaveLen(1), "backups by phase: %v", backups)
	lost := rowsMissing(db.Status.CurrentPrimary)
	fmt.Printf("chaos-realnode rounds=%d ops=%d kills=%d leader_kills=%d converged=yes lost_rows=%d rows_acknowledged=%d seconds=%.0f\n",
		round, ops, kills.Load(), leaderKills.Load(), lost, len(result.acknowledged), time.Since(started).Seconds())
	g.Expect(lost).To(BeZero(), "acknowledged rows missing on the primary %s", db.Status.CurrentPrimary)
	g.Eventually(func() int { return rowsMissing(lastReplica) }, 30*time.Second, time.Second).Should(BeZero(), "acknowledged rows on the replica")
	g.Expect(leaderKills.Load()).To(BeNumerically(">=", minLeaderKills), "leaders killed in %d rounds", round)
	g.Expect(len(result.acknowledged)).To(BeNumerically(">", 100))
}
