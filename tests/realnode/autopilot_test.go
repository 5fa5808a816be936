package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/autopilot/sim"
	"github.com/dbpilot/dbpilot/internal/dashboards"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

// autopilotDatabase is a PostgreSQL Database whose auto-pilot, in mode,
// moves within the bounds, with short stabilization windows.
func autopilotDatabase(ns, name string, replicas int32, mode dbpilotv1alpha1.AutopilotMode, bounds dbpilotv1alpha1.ReplicaBounds, tiers dbpilotv1alpha1.TierBounds) *dbpilotv1alpha1.Database {
	return autopilotDatabaseOf(newDatabase(ns, name, dbpilotv1alpha1.EnginePostgres, "15", replicas), mode, bounds, tiers)
}

// autopilotDatabaseOf gives db an auto-pilot in mode that moves within the
// bounds, with short stabilization windows.
func autopilotDatabaseOf(db *dbpilotv1alpha1.Database, mode dbpilotv1alpha1.AutopilotMode, bounds dbpilotv1alpha1.ReplicaBounds, tiers dbpilotv1alpha1.TierBounds) *dbpilotv1alpha1.Database {
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{
		Mode:                          mode,
		Replicas:                      &bounds,
		Tiers:                         &tiers,
		Targets:                       &dbpilotv1alpha1.AutopilotTargets{CPUUtilizationPercent: 80, MemoryUtilizationPercent: 90, ConnectionUtilizationPercent: 80},
		ScaleUpStabilizationSeconds:   ptr.To[int32](10),
		ScaleDownStabilizationSeconds: ptr.To[int32](30),
		TierCooldownSeconds:           ptr.To[int32](0),
	}
	return db
}

// readyPods counts the Database's ready pods, and the CPU limit of its
// database container.
func readyPods(g Gomega, db *dbpilotv1alpha1.Database) (ready int, cpu string) {
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: dbpilotv1alpha1.LabelDatabase + "=" + db.Name})
	g.Expect(err).NotTo(HaveOccurred())
	for i := range pods.Items {
		pod := &pods.Items[i]
		if podIsReady(pod) && pod.DeletionTimestamp == nil {
			ready++
			for _, c := range pod.Spec.Containers {
				if c.Name == "database" {
					cpu = c.Resources.Limits.Cpu().String()
				}
			}
		}
	}
	return ready, cpu
}

// waitReady waits until the Database has n ready pods, and says what the
// auto-pilot last decided if it does not.
func waitReady(g Gomega, db *dbpilotv1alpha1.Database, n int, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		ready, _ := readyPods(g, db)
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		status := "none"
		if a := db.Status.Autopilot; a != nil && a.LastDecision != nil {
			status = fmt.Sprintf("%s %s: %s (next eligible %v)", a.LastDecision.Action, a.LastDecision.Reason, a.LastDecision.Message, a.NextEligibleTime)
		}
		ap := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)
		measured := map[string]float64{}
		if snap, err := autopilotSource.Snapshot(context.Background(), time.Now()); err == nil {
			for pod, m := range snap.Pods {
				if pod.Namespace == db.Namespace {
					measured[pod.Pod] = m.CPUCores
				}
			}
		}
		g.Expect(ready).To(Equal(n), "last decision: %s; AutopilotReady %+v; CPU measured %v", status, ap, measured)
	}, timeout, time.Second).Should(Succeed())
}

// autopilotPrometheus starts a real Prometheus scraping the namespace and
// points the in-process auto-pilot at it, until the test ends.
func autopilotPrometheus(t *testing.T, g Gomega, namespace string) *promserver.Server {
	server := startPrometheus(t, g, namespace)
	source, err := promsource.New(promsource.Options{URL: server.URL, RateWindow: autopilotRateWindow})
	g.Expect(err).NotTo(HaveOccurred())
	autopilotSource.use(source)
	t.Cleanup(func() { autopilotSource.use(nil) })
	return server
}

// waitAutopilotReady waits until the auto-pilot has fresh, complete
// metrics for the Database.
func waitAutopilotReady(g Gomega, db *dbpilotv1alpha1.Database) {
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)).To(BeTrue(), "%+v", db.Status.Conditions)
	}, 3*time.Minute, time.Second).Should(Succeed())
}

// decisionTimeline logs each new last decision and readiness reason of
// the auto-pilot, with the seconds since from.
func decisionTimeline(t *testing.T, db *dbpilotv1alpha1.Database, from time.Time) func(*dbpilotv1alpha1.Database) {
	last := ""
	return func(db *dbpilotv1alpha1.Database) {
		now := ""
		if c := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady); c != nil {
			now = c.Reason
		}
		if a := db.Status.Autopilot; a != nil && a.LastDecision != nil {
			now += " " + a.LastDecision.Action + " " + a.LastDecision.Reason
		}
		if now != last {
			t.Logf("%4.0fs %s: %s", time.Since(from).Seconds(), db.Name, now)
			last = now
		}
	}
}

// autopilotEvent is the newest auto-pilot Event of the Database whose note
// says verb ("Recommends", "Applies").
func autopilotEvent(g Gomega, db *dbpilotv1alpha1.Database, verb string) string {
	events, err := clientset.CoreV1().Events(db.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", db.Name),
			fields.OneTermEqualSelector("reason", dbpilotv1alpha1.EventReasonAutopilot)).String()})
	g.Expect(err).NotTo(HaveOccurred())
	note := ""
	var newest time.Time
	for _, e := range events.Items {
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if strings.HasPrefix(e.Message, verb) && !at.Before(newest) {
			note, newest = e.Message, at
		}
	}
	return note
}

// hpaWould replays the CPU the auto-pilot's source measured for a
// Database's pods, every 15 s (the HPA's sync period) from the load's
// start, through Kubernetes' HPA algorithm at the same CPU target and
// replica bounds: when it would first have scaled up, and to how many
// pods.
func hpaWould(g Gomega, server *promserver.Server, db *dbpilotv1alpha1.Database, from, to time.Time, replicas int32) string {
	// The pods' CPU request is their tier's CPU, as the StatefulSet sets
	// it: the spec's (the auto-pilot never edits it), small by default.
	tier := db.Spec.Tier
	if tier == "" {
		tier = dbpilotv1alpha1.TierSmall
	}
	size, ok := tier.Size()
	g.Expect(ok).To(BeTrue(), "tier %q", tier)
	expr := fmt.Sprintf(`avg(rate(%s{namespace=%q, pod=~"%s-[0-9]+", container=%q}[%s])) / %g`,
		promsource.CPUSeconds, db.Namespace, db.Name, promsource.DatabaseContainer, model.Duration(autopilotRateWindow), size.CPU.AsApproximateFloat64())
	value, _, err := prometheusAPI(g, server).QueryRange(context.Background(), expr, promv1.Range{Start: from, End: to, Step: 15 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	matrix, _ := value.(model.Matrix)
	if len(matrix) == 0 {
		return "no CPU series"
	}
	hpa := sim.NewHPA(db.Spec.Autopilot.Replicas.Min, db.Spec.Autopilot.Replicas.Max)
	hpa.Target = 0.8
	highest := 0.0
	for _, sample := range matrix[0].Values {
		highest = max(highest, float64(sample.Value))
		at := sample.Timestamp.Time()
		if desired := hpa.Desired(at, replicas, float64(sample.Value), true); desired > replicas {
			return fmt.Sprintf("%d -> %d pods %.0fs after the load started (average CPU %.0f%% of the request)",
				replicas, desired, at.Sub(from).Seconds(), 100*float64(sample.Value))
		}
	}
	return fmt.Sprintf("no scale-up (the pods' average CPU peaked at %.0f%% of the request, target 80%%)", 100*highest)
}

// checkDashboards runs every dashboard query over the test's time range
// with the Database variables of each of dbs: each returns data for one of
// them at least.
func checkDashboards(t *testing.T, g Gomega, server *promserver.Server, from time.Time, dbs ...*dbpilotv1alpha1.Database) {
	root, err := localcluster.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	queries, err := dashboards.Load(filepath.Join(root, "config", "grafana"))
	g.Expect(err).NotTo(HaveOccurred())
	api := prometheusAPI(g, server)
	for _, q := range queries {
		samples := 0
		for _, db := range dbs {
			expr := dashboards.Expand(q.Expr, map[string]string{"namespace": db.Namespace, "database": db.Name, "__rate_interval": "1m"})
			value, _, err := api.QueryRange(context.Background(), expr, promv1.Range{Start: from, End: time.Now(), Step: 15 * time.Second})
			g.Expect(err).NotTo(HaveOccurred(), "%s, %s: %s", q.Dashboard, q.Where, expr)
			for _, series := range value.(model.Matrix) {
				samples += len(series.Values)
			}
		}
		g.Expect(samples).To(BeNumerically(">", 0), "%s, %s returns no data: %s", q.Dashboard, q.Where, q.Expr)
	}
	t.Logf("%d dashboard queries return data", len(queries))
}

// TestAutopilotOnRealLoad runs the auto-pilot on the real node against a
// real Prometheus scraping real PostgreSQL pods under pgbench load from
// the host. Read-only load on the -ro Service of a two-pod Database makes
// it recommend a third pod (Recommend mode changes nothing), then, in Auto
// mode, add it; when the load stops it goes back to two pods after its
// windows. Write load on a one-pod Database whose owner allows the medium
// tier makes it raise the tier. Each decision is an Event with the numbers
// behind it. Every dashboard query returns data. With Prometheus stopped
// the auto-pilot holds, says why, and changes nothing.
func TestAutopilotOnRealLoad(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-autopilot"
	restrictedNamespace(t, ns)
	began := time.Now()

	reads := autopilotDatabase(ns, "reads", 2, dbpilotv1alpha1.AutopilotRecommend,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierSmall})
	// Backed up to the claim dbpilot creates, so the backup series exist.
	reads.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "0 0 1 1 *"}
	g.Expect(k8sClient.Create(ctx, reads)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), reads) })
	waitAvailable(g, reads, 5*time.Minute)
	server := autopilotPrometheus(t, g, ns)

	init := pgbench(t, g, reads, reads.ReadWriteServiceName(), "", "-i", "-s", "5", "-q")
	init.wait(g, 3*time.Minute)
	waitAutopilotReady(g, reads)

	// Read load on the replicas, in Recommend mode: a third pod is
	// recommended, nothing changes.
	loadStart := time.Now()
	readLoad := pgbench(t, g, reads, reads.ReadOnlyServiceName(), "", "-S", "-c", "6", "-j", "2", "-T", "600")
	timeline := decisionTimeline(t, reads, loadStart)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(reads), reads)).To(Succeed())
		timeline(reads)
		a := reads.Status.Autopilot
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Recommendation).NotTo(BeNil())
		g.Expect(a.Recommendation.Replicas).To(Equal(ptr.To[int32](3)), "last decision %+v", a.LastDecision)
		g.Expect(a.LastDecision.Reason).To(Equal(autopilot.ReasonReadPressure))
	}, 4*time.Minute, time.Second).Should(Succeed())
	recommended := time.Now()
	t.Logf("Recommend: %s", autopilotEvent(g, reads, "Recommends"))
	g.Expect(autopilotEvent(g, reads, "Recommends")).To(ContainSubstring("read load"), "the Event gives the numbers")
	g.Consistently(func(g Gomega) int {
		n, _ := readyPods(g, reads)
		return n
	}, 10*time.Second, time.Second).Should(Equal(2), "Recommend mode changes nothing")

	readLoad.running(g)
	// Auto mode: the third pod comes.
	changeDatabase(g, reads, func(db *dbpilotv1alpha1.Database) { db.Spec.Autopilot.Mode = dbpilotv1alpha1.AutopilotAuto })
	automatic := time.Now()
	waitReady(g, reads, 3, 4*time.Minute)
	scaledUp := time.Now()
	// Applying it is an Event (the standing recommendation's, or the
	// first Auto cycle's own decision when it came first).
	g.Eventually(func() string { return autopilotEvent(g, reads, "Applies") }, time.Minute, time.Second).
		Should(ContainSubstring("Applies ScaleUp"))
	t.Logf("autopilot reads: load start -> recommendation %.0fs; Auto on -> third pod ready %.0fs; %s",
		recommended.Sub(loadStart).Seconds(), scaledUp.Sub(automatic).Seconds(), autopilotEvent(g, reads, "Applies"))
	t.Logf("hpa on the same CPU: %s", hpaWould(g, server, reads, loadStart, recommended, 2))

	readLoad.running(g)
	// The load stops: back to two pods after the windows.
	readLoad.stop()
	loadEnd := time.Now()
	waitReady(g, reads, 2, 5*time.Minute)
	t.Logf("autopilot reads: load end -> two pods %.0fs (flap window %s, scale-down window 30s); %s",
		time.Since(loadEnd).Seconds(), autopilotFlapWindow, autopilotEvent(g, reads, "Applies"))

	// A backup, for the dashboards' backup panels.
	backup := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reads-now"},
		Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: reads.Name}}
	g.Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	g.Eventually(func(g Gomega) dbpilotv1alpha1.BackupPhase {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
		return backup.Status.Phase
	}, 3*time.Minute, time.Second).Should(Equal(dbpilotv1alpha1.BackupPhaseCompleted))
	g.Eventually(func(g Gomega) model.Vector {
		return query(g, server, fmt.Sprintf(`dbpilot_backup_last_success_timestamp_seconds{namespace=%q, database="reads"}`, ns))
	}, time.Minute, time.Second).Should(HaveLen(1), "Prometheus has the backup's time from the operator")
	// kubectl describe tells what happened: the auto-pilot's decisions,
	// the scaling they made, the backup.
	g.Eventually(func(g Gomega) []string { return describedEvents(describeDatabase(g, reads)) }, 30*time.Second, time.Second).Should(And(
		ContainElement(MatchRegexp(`^Normal\s+Autopilot\s.*Recommends ScaleUp`)),
		ContainElement(MatchRegexp(`^Normal\s+Autopilot\s.*Applies ScaleUp`)),
		ContainElement(MatchRegexp(`^Normal\s+Scaled\s.*from 2 to 3`)),
		ContainElement(MatchRegexp(`^Normal\s+Scaled\s.*from 3 to 2`)),
		ContainElement(MatchRegexp(`^Normal\s+BackupCompleted\s.*reads-now`))))
	// One pod, the auto-pilot off: room on the node's 2 CPUs for the
	// next Database's medium pod, and the series stay for the dashboards.
	changeDatabase(g, reads, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Replicas = ptr.To[int32](1)
		db.Spec.Autopilot.Mode = dbpilotv1alpha1.AutopilotOff
	})
	waitReady(g, reads, 1, 2*time.Minute)

	// Write load on one pod that may grow to the medium tier.
	writes := autopilotDatabase(ns, "writes", 1, dbpilotv1alpha1.AutopilotAuto,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 1}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierMedium})
	g.Expect(k8sClient.Create(ctx, writes)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), writes) })
	waitAvailable(g, writes, 5*time.Minute)
	// The Service's rules may trail the Database's Available; errors are
	// flattened to their text, which holds no password.
	g.Eventually(func() error {
		session, err := connectApp(ctx, writes)
		if err != nil {
			return errors.New(err.Error())
		}
		defer session.close()
		if err := session.exec(ctx, "CREATE TABLE events (id bigint, note text)"); err != nil {
			return errors.New(err.Error())
		}
		return nil
	}, time.Minute, time.Second).Should(Succeed())
	before, err := clientset.CoreV1().Pods(ns).Get(ctx, writes.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	loadStart = time.Now()
	writeLoad := pgbench(t, g, writes, writes.ReadWriteServiceName(),
		"INSERT INTO events SELECT g, md5(g::text) FROM generate_series(1, 200) g;\n", "-n", "-c", "4", "-j", "2", "-T", "600")
	var decided time.Time
	g.Eventually(func(g Gomega) dbpilotv1alpha1.Tier {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(writes), writes)).To(Succeed())
		if a := writes.Status.Autopilot; a != nil && a.Recommendation != nil && a.Recommendation.Tier == dbpilotv1alpha1.TierMedium && decided.IsZero() {
			decided = time.Now()
			g.Expect(a.LastDecision.Reason).To(Equal(autopilot.ReasonWritePressure), "%+v", a.LastDecision)
		}
		return writes.Status.Tier
	}, 4*time.Minute, time.Second).Should(Equal(dbpilotv1alpha1.TierMedium))
	g.Eventually(func(g Gomega) string {
		n, cpu := readyPods(g, writes)
		g.Expect(n).To(Equal(1))
		return cpu
	}, 3*time.Minute, time.Second).Should(Equal("1"))
	applied := autopilotEvent(g, writes, "Applies")
	t.Logf("autopilot writes: load start -> decision %.0fs -> medium pod ready %.0fs; %s",
		decided.Sub(loadStart).Seconds(), time.Since(decided).Seconds(), applied)
	t.Logf("hpa on the same CPU: %s (it changes replicas only, here bound to 1, never the tier)", hpaWould(g, server, writes, loadStart, decided, 1))
	writeLoad.stop()
	// The Event carries the numbers the decision was made on.
	g.Expect(applied).To(MatchRegexp(`primary at \d+%.* of target \d+%.*write load \d+\.\d+`))
	// The primary-safe path: the lone pod grew in place, the same pod,
	// never restarted, still the primary.
	after, err := clientset.CoreV1().Pods(ns).Get(ctx, writes.PodName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.UID).To(Equal(before.UID), "the pod was not recreated")
	g.Expect(restartCount(*after)).To(Equal(restartCount(*before)), "no container restarted")
	g.Expect(writes.Status.CurrentPrimary).To(Equal(writes.PodName(0)))

	checkDashboards(t, g, server, began, reads, writes)

	// Prometheus stops: the auto-pilot holds, says why, changes nothing.
	g.Expect(server.Stop()).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(writes), writes)).To(Succeed())
		c := meta.FindStatusCondition(writes.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		return c.Reason
	}, time.Minute, time.Second).Should(Equal(dbpilotv1alpha1.ReasonPrometheusUnavailable))
	g.Consistently(func(g Gomega) dbpilotv1alpha1.Tier {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(writes), writes)).To(Succeed())
		return writes.Status.Tier
	}, 3*autopilotInterval, time.Second).Should(Equal(dbpilotv1alpha1.TierMedium))
	// Every operator log line about a Database names it; the auto-pilot's
	// decisions are among them.
	lines, unnamed := databaseLogLines(g)
	g.Expect(unnamed).To(BeEmpty(), "operator log lines that do not name their Database")
	g.Expect(lines).To(ContainElement(And(
		HaveField("Logger", HavePrefix("autopilot")), HaveField("Message", HaveSuffix("a change of size")),
		HaveField("Database.Name", Equal(writes.Name)), HaveField("Database.Namespace", Equal(ns)))))
	t.Logf("the whole test took %.0fs", time.Since(began).Seconds())
}

// TestAutopilotOnRealMariaDBLoad runs the auto-pilot in Auto mode on a
// two-pod MariaDB Database under sysbench's point selects from the host on
// its -ro Service: the replica saturates its CPU limit, the auto-pilot adds
// a third pod, which clones and streams, and keeps it while the load goes
// on; when the load stops it goes back to two pods after its windows,
// removing a replica, never the primary. Each decision is an Event with
// the numbers behind it.
func TestAutopilotOnRealMariaDBLoad(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-autopilot-mariadb"
	restrictedNamespace(t, ns)
	began := time.Now()

	db := autopilotDatabaseOf(newDatabase(ns, "shop", dbpilotv1alpha1.EngineMariaDB, "10.11", 2), dbpilotv1alpha1.AutopilotAuto,
		dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3}, dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierSmall})
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	waitAvailable(g, db, 5*time.Minute)
	primary := db.Status.CurrentPrimary
	g.Expect(primary).NotTo(BeEmpty())
	server := autopilotPrometheus(t, g, ns)

	table := []string{"oltp_point_select", "--tables=1", "--table_size=50000"}
	prepare := sysbench(t, g, db, db.ReadWriteServiceName(), append(table, "prepare")...)
	prepare.wait(g, 3*time.Minute)
	waitAutopilotReady(g, db)

	loadStart := time.Now()
	load := sysbench(t, g, db, db.ReadOnlyServiceName(), append(table, "--threads=6", "--time=600", "--report-interval=0", "run")...)
	timeline := decisionTimeline(t, db, loadStart)
	var decided time.Time
	g.Eventually(func(g Gomega) int32 {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		timeline(db)
		if a := db.Status.Autopilot; a != nil && a.LastDecision != nil && a.LastDecision.Action == string(autopilot.ActionScaleUp) && decided.IsZero() {
			decided = time.Now()
			g.Expect(a.LastDecision.Reason).To(Equal(autopilot.ReasonReadPressure), "%+v", a.LastDecision)
		}
		return db.EffectiveReplicas()
	}, 4*time.Minute, time.Second).Should(Equal(int32(3)))
	load.running(g)
	waitReady(g, db, 3, 4*time.Minute)
	g.Expect(autopilotEvent(g, db, "Applies")).To(And(ContainSubstring("Applies ScaleUp"), ContainSubstring("read load")), "the Event gives the numbers")
	t.Logf("autopilot mariadb reads: load start -> decision %.0fs -> third pod ready %.0fs; %s",
		decided.Sub(loadStart).Seconds(), time.Since(decided).Seconds(), autopilotEvent(g, db, "Applies"))
	t.Logf("hpa on the same CPU: %s", hpaWould(g, server, db, loadStart, decided, 2))

	// The load goes on past the flap and scale-down windows: the three
	// pods stay, since the reads on -ro need both replicas (spread over
	// every pod, they would seem to fit two, and the Database would flap).
	g.Consistently(func(g Gomega) int32 {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		timeline(db)
		load.running(g)
		return db.EffectiveReplicas()
	}, autopilotFlapWindow+40*time.Second, time.Second).Should(Equal(int32(3)), "scaled down under the same load")
	t.Logf("autopilot mariadb reads: three pods kept under the load for %s; signals %v", autopilotFlapWindow+40*time.Second, db.Status.Autopilot.LastDecision.Signals)

	load.running(g)
	load.stop()
	loadEnd := time.Now()
	waitReady(g, db, 2, 5*time.Minute)
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
	g.Expect(db.Status.CurrentPrimary).To(Equal(primary), "scaling down removes a replica, never the primary")
	t.Logf("autopilot mariadb reads: load end -> two pods %.0fs; %s; the whole test took %.0fs",
		time.Since(loadEnd).Seconds(), autopilotEvent(g, db, "Applies"), time.Since(began).Seconds())
}
