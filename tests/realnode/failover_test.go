package realnode_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// writerResult is what a continuous writer saw.
type writerResult struct {
	acknowledged []int
	// longestGap is the longest time between two acknowledged writes.
	longestGap time.Duration
}

// writer inserts increasing ids through the -rw Service, one every 50 ms,
// reconnecting after every failure, until it is finished.
type writer struct {
	stop     chan struct{}
	once     sync.Once
	done     chan writerResult
	acked    atomic.Int64
	gap      atomic.Int64
	finished *writerResult
}

// startWriter starts a writer of ids from first.
func startWriter(db *dbpilotv1alpha1.Database, insert string, first int) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan writerResult, 1)}
	go func() {
		var result writerResult
		var session sqlSession
		last := time.Now()
		for id := first; ; {
			select {
			case <-w.stop:
				if session != nil {
					session.close()
				}
				w.done <- result
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if session == nil {
				s, err := connectApp(ctx, db)
				if err != nil {
					cancel()
					continue
				}
				session = s
			}
			err := session.exec(ctx, fmt.Sprintf(insert, id))
			cancel()
			if err != nil {
				// The row may have committed without the acknowledgement
				// (a synchronous commit's wait cut short): the next id is
				// fresh either way, and only acknowledged ones count.
				id++
				session.close()
				session = nil
				continue
			}
			now := time.Now()
			if gap := now.Sub(last); gap > result.longestGap {
				result.longestGap = gap
				w.gap.Store(int64(gap))
			}
			last = now
			result.acknowledged = append(result.acknowledged, id)
			w.acked.Add(1)
			id++
		}
	}()
	return w
}

// startFreshWriter starts a writer of ids above those in the table (the
// rows before it stay) and lets it write for two seconds.
func startFreshWriter(g Gomega, db *dbpilotv1alpha1.Database, insert string) *writer {
	ctx := context.Background()
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	base, err := session.queryInt(ctx, "SELECT COALESCE(MAX(id), 0) FROM writes")
	session.close()
	g.Expect(err).NotTo(HaveOccurred())
	w := startWriter(db, insert, base+1)
	time.Sleep(2 * time.Second)
	return w
}

// writesResume waits until the writer has had n more writes acknowledged.
func (w *writer) writesResume(g Gomega, n int64) {
	from := w.acked.Load()
	g.Eventually(w.acked.Load, 2*time.Minute, 100*time.Millisecond).Should(BeNumerically(">=", from+n), "writes through -rw resume")
}

// longestGapSoFar is the longest time between two acknowledged writes yet.
func (w *writer) longestGapSoFar() time.Duration {
	return time.Duration(w.gap.Load())
}

// finish stops the writer and returns what it saw; later calls return the
// same.
func (w *writer) finish() writerResult {
	w.once.Do(func() {
		close(w.stop)
		result := <-w.done
		w.finished = &result
	})
	return *w.finished
}

// TestFailoverKeepsTheDatabaseWritable kills the primary's pod of a
// Database of each engine (two pods, failover delay 0) under a continuous
// writer: the replica is promoted, writes through the -rw Service resume,
// the FailingOver condition and Events tell the story, the former primary
// comes back as a replica of the new primary with every row it has (TLS
// is required, so it rewinds or rejoins over TLS), and the test prints the
// write-unavailable time and the acknowledged rows lost (replication is
// asynchronous). The Database then hibernates and resumes, switches over
// on request and scales down (hibernateUnderWriter, switchoverUnderWriter).
func TestFailoverKeepsTheDatabaseWritable(t *testing.T) {
	besideOtherTests(t, 1000) // two small pods at a time
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			testFailover(t, tc.replicationSQL, tc.createWrites, tc.insert, tc.countWrites, false)
		})
	}
}

// TestSynchronousFailoverLosesNothing kills the primary's pod of a
// Database of each engine with synchronous replication (one replica
// confirms each commit) under a continuous writer: no acknowledged row is
// lost.
func TestSynchronousFailoverLosesNothing(t *testing.T) {
	besideOtherTests(t, 1000) // two small pods at a time
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			testFailover(t, tc.replicationSQL, tc.createWrites, tc.insert, tc.countWrites, true)
		})
	}
}

var failoverEngines = []struct {
	replicationSQL
	createWrites, insert, countWrites string
}{
	{replicationEngines[0], "CREATE TABLE writes (id int PRIMARY KEY)", "INSERT INTO writes VALUES (%d)", "SELECT count(*)::int FROM writes"},
	{replicationEngines[1], "CREATE TABLE writes (id INT PRIMARY KEY)", "INSERT INTO writes VALUES (%d)", "SELECT COUNT(*) FROM writes"},
}

func testFailover(t *testing.T, tc replicationSQL, createWrites, insert, countWrites string, synchronous bool) {
	g := NewWithT(t)
	ctx := context.Background()
	mode := "async"
	ns := "real-failover-" + string(tc.engine)
	if synchronous {
		mode, ns = "sync", "real-sync-"+string(tc.engine)
	}
	db := twoPodDatabase(t, g, ns, tc, createWrites, func(db *dbpilotv1alpha1.Database) {
		if synchronous {
			db.Spec.Replication = &dbpilotv1alpha1.ReplicationSpec{Synchronous: &dbpilotv1alpha1.SynchronousReplication{Count: 1}}
		} else {
			// The former primary rewinds (PostgreSQL) or rejoins
			// (MariaDB) over TLS alone.
			db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true}
		}
	})

	w := startWriter(db, insert, 1)
	t.Cleanup(func() { w.finish() })
	time.Sleep(3 * time.Second)

	// Kill the primary's pod: no grace, as a lost node would.
	former, promoted := db.PodName(0), db.PodName(1)
	killed := time.Now()
	g.Expect(clientset.CoreV1().Pods(ns).Delete(ctx, former, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(promoted))
		cond := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionFailingOver)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "FailingOver: %s", cond.Message)
		g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailedOver)).To(ContainSubstring(promoted + " replaced " + former))
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	t.Logf("%s: %s promoted and serving %.1fs after the primary's pod was killed", tc.engine, promoted, time.Since(killed).Seconds())
	g.Expect(value(operatorFamilies(g), "dbpilot_failovers_total", map[string]string{"namespace": ns, "database": db.Name, "engine": string(tc.engine)})).
		To(Equal(1.0), "dbpilot_failovers_total counts the failover")

	// The former primary returns as a replica of the new one and has every
	// row the new primary has.
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(former)))
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
	t.Logf("%s: the former primary rejoined as a replica %.1fs after it was killed", tc.engine, time.Since(killed).Seconds())
	w.writesResume(g, 20)
	result := w.finish()

	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	g.Expect(primary.queryInt(ctx, tc.isReplica)).To(Equal(0), "the -rw Service reaches a writable primary")
	present, err := primary.queryInt(ctx, countWrites)
	g.Expect(err).NotTo(HaveOccurred())
	acked := len(result.acknowledged)
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("failover %s %s write_unavailable_s=%.1f rows_acknowledged=%d rows_present=%d rows_lost_%s=%d",
		tc.engine, mode, result.longestGap.Seconds(), acked, present, mode, lost)
	g.Expect(acked).To(BeNumerically(">", 20), "the writer wrote before and after the failover")
	if synchronous {
		g.Expect(lost).To(BeZero(), "synchronous replication lost acknowledged rows")
	}
	g.Eventually(func(g Gomega) int { return readReplica(g, db, tc.withSum(countWrites), former) },
		time.Minute, 500*time.Millisecond).Should(Equal(present), "the former primary has the new primary's rows")

	// kubectl describe tells the story.
	g.Expect(describedEvents(describeDatabase(g, db))).To(And(
		ContainElement(MatchRegexp(`^Warning\s+`+dbpilotv1alpha1.EventReasonFailingOver+`\s`)),
		ContainElement(MatchRegexp(`^Normal\s+`+dbpilotv1alpha1.EventReasonFailedOver+`\s.*`+promoted+` replaced `+former))))
	if synchronous {
		return
	}

	// Hibernating hands the primary back to ordinal 0 with nothing lost,
	// stops both pods and starts them again; a switchover on request
	// hands it over again; a request naming a pod that cannot take over
	// is refused.
	hibernateUnderWriter(t, g, db, tc, insert)
	annotate := func(target string) func() {
		return func() {
			changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) {
				if db.Annotations == nil {
					db.Annotations = map[string]string{}
				}
				db.Annotations[dbpilotv1alpha1.AnnotationSwitchoverTo] = target
			})
		}
	}
	annotate(db.PodName(7))()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Annotations).NotTo(HaveKey(dbpilotv1alpha1.AnnotationSwitchoverTo))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonSwitchoverRefused)).To(ContainSubstring(db.PodName(7) + " is not a pod of this Database"))

	// Scaling down to one pod while the primary is the pod of ordinal 1
	// switches over to ordinal 0 first: the primary's pod is never removed.
	switchoverUnderWriter(t, g, db, tc, insert, countWrites, promoted, annotate(promoted))
	// pg_rewind, promotions and demotions leave no password in any log.
	expectNoInternalPasswords(g, db)
	switchoverUnderWriter(t, g, db, tc, insert, countWrites, former, func() { scale(g, db, 1) })
	g.Eventually(func(g Gomega) {
		_, err := clientset.CoreV1().Pods(ns).Get(ctx, promoted, metav1.GetOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("not found")))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
}

// switchoverUnderWriter triggers a switchover to target while a writer
// writes through the -rw Service, waits until target is the primary, and
// expects every acknowledged row on it; it prints the longest time writes
// waited. A former primary that stays must verify its new primary's
// certificate from its first connection as a replica.
func switchoverUnderWriter(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, insert, countWrites, target string, trigger func()) {
	ctx := context.Background()
	// dbpilot refuses a switchover to a replica that is not ready and
	// caught up (a former primary is while it restarts).
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(target)))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	former := db.Status.CurrentPrimary
	w := startFreshWriter(g, db, insert)
	defer w.finish()
	started := time.Now()
	trigger()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(target))
		g.Expect(db.Annotations).NotTo(HaveKey(dbpilotv1alpha1.AnnotationSwitchoverTo))
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	took := time.Since(started)
	w.writesResume(g, 20)
	result := w.finish()
	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("switchover %s to %s: switchover_s=%.1f write_unavailable_s=%.1f rows_acknowledged=%d rows_lost=%d",
		tc.engine, target, took.Seconds(), result.longestGap.Seconds(), len(result.acknowledged), lost)
	g.Expect(lost).To(BeZero(), "a switchover loses no acknowledged row")
	g.Expect(len(result.acknowledged)).To(BeNumerically(">", 20))
	if ptr.Deref(db.Spec.Replicas, 1) > 1 {
		// Demoted while the -rw Service had no primary, it may not have
		// reached the target: it verifies it from its first connection
		// all the same, so no reconnection restarts its replication while
		// a switchover back to it would wait for it to catch up.
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			g.Expect(db.Status.Instances).To(ContainElement(caughtUpReplica(former)))
		}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
		g.Expect(podLog(g, db.Namespace, former, "database")).NotTo(ContainSubstring("replication now verifies the primary's certificate"),
			"the former primary %s verified its new primary only after a reconnection", former)
	}
}

// twoPodDatabase creates a two-pod Database of the engine in namespace ns
// with failover delay 0 (change applies the test's own settings), waits
// until its primary and replica serve, and creates the writes table.
func twoPodDatabase(t *testing.T, g Gomega, ns string, tc replicationSQL, createWrites string, change func(*dbpilotv1alpha1.Database)) *dbpilotv1alpha1.Database {
	return writableDatabase(t, g, ns, tc, createWrites, 2, change)
}

// writableDatabase is twoPodDatabase with pods pods.
func writableDatabase(t *testing.T, g Gomega, ns string, tc replicationSQL, createWrites string, pods int, change func(*dbpilotv1alpha1.Database)) *dbpilotv1alpha1.Database {
	ctx := context.Background()
	restrictedNamespace(t, ns)
	db := newDatabase(ns, "orders", tc.engine, tc.version, int32(pods))
	db.Spec.Failover = &dbpilotv1alpha1.FailoverSpec{DelaySeconds: ptr.To[int32](0)}
	if change != nil {
		change(db)
	}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitReadyPods(g, db, int32(pods))
	expectInstances(g, db, pods)
	var session sqlSession
	g.Eventually(func() (err error) {
		session, err = connectApp(ctx, db)
		return err
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	defer session.close()
	g.Expect(session.exec(ctx, createWrites)).To(Succeed())
	return db
}

// lostRows counts the acknowledged ids the writes table lacks.
func lostRows(g Gomega, primary sqlSession, acknowledged []int) int {
	lost := 0
	for _, id := range acknowledged {
		n, err := primary.queryInt(context.Background(), fmt.Sprintf("SELECT COUNT(*) FROM writes WHERE id = %d", id))
		g.Expect(err).NotTo(HaveOccurred())
		if n == 0 {
			lost++
		}
	}
	return lost
}

// eventNote is the note of the newest Event of a reason in the namespace.
func eventNote(g Gomega, namespace, reason string) string {
	events, err := clientset.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	note := ""
	for _, e := range events.Items {
		if e.Reason == reason {
			note = e.Note
		}
	}
	return note
}

// withSum is the engine's statements with sum replaced.
func (tc replicationSQL) withSum(sum string) replicationSQL {
	tc.sum = sum
	return tc
}
