package realnode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// parameterCase is what TestParametersReachTheServers sets on an engine.
type parameterCase struct {
	// show reads a setting's value, %s its name.
	show string
	// initial is set at creation, shown as initialShown; reloaded
	// replaces it, taken without a restart, and shown as reloadedShown.
	initial, reloaded           map[string]dbpilotv1alpha1.ParameterValue
	initialShown, reloadedShown map[string]string
	refused                     map[string]dbpilotv1alpha1.ParameterValue
	refusal                     string
	restart                     map[string]dbpilotv1alpha1.ParameterValue
	restartName, restartSet     string
}

var parameterCases = map[dbpilotv1alpha1.Engine]parameterCase{
	dbpilotv1alpha1.EnginePostgres: {
		show:          "SELECT current_setting('%s')",
		initial:       map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "64MB"},
		initialShown:  map[string]string{"work_mem": "64MB"},
		reloaded:      map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "32MB", "log_min_duration_statement": "250ms"},
		reloadedShown: map[string]string{"work_mem": "32MB", "log_min_duration_statement": "250ms"},
		refused:       map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "lots", "log_min_duration_statement": "250ms"},
		refusal:       `invalid value for parameter "work_mem": "lots"`,
		restart:       map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "32MB", "max_locks_per_transaction": "128"},
		restartName:   "max_locks_per_transaction", restartSet: "128",
	},
	dbpilotv1alpha1.EngineMariaDB: {
		show:          "SELECT @@global.%s",
		initial:       map[string]dbpilotv1alpha1.ParameterValue{"max_allowed_packet": "64M"},
		initialShown:  map[string]string{"max_allowed_packet": "67108864"},
		reloaded:      map[string]dbpilotv1alpha1.ParameterValue{"max_allowed_packet": "32M", "long_query_time": "2.5"},
		reloadedShown: map[string]string{"max_allowed_packet": "33554432", "long_query_time": "2.5"},
		refused:       map[string]dbpilotv1alpha1.ParameterValue{"max_allowed_packet": "lots", "long_query_time": "2.5"},
		refusal:       "Error while setting value 'lots' to 'max_allowed_packet'",
		restart:       map[string]dbpilotv1alpha1.ParameterValue{"max_allowed_packet": "32M", "back_log": "100"},
		restartName:   "back_log", restartSet: "100",
	},
}

// TestParametersReachTheServers sets spec.parameters of a two-pod
// Database of each engine under a writer: settings the server takes
// online reach both servers with no restart, a value the server refuses
// changes nothing and shows in Degraded, and a setting that needs a
// restart rolls the pods, the primary after a switchover, without losing
// a write. PostgreSQL then drops that setting: lower than the primary's,
// it would stop the replicas' replay, so they keep the primary's value
// until the primary has restarted, and the roll ends.
func TestParametersReachTheServers(t *testing.T) {
	for _, tc := range failoverEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			besideOtherTests(t, 1000) // two small pods
			testParameters(t, tc.replicationSQL, tc.createWrites, tc.insert, parameterCases[tc.engine])
		})
	}
}

func testParameters(t *testing.T, tc replicationSQL, createWrites, insert string, pc parameterCase) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-parameters-" + string(tc.engine)
	db := writableDatabase(t, g, ns, tc, createWrites, 2, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Parameters = pc.initial
	})
	show := func(g Gomega, pod, name string) string {
		session, err := connectAppToPod(ctx, db, pod)
		g.Expect(err).NotTo(HaveOccurred())
		defer session.close()
		value, err := queryString(ctx, session, fmt.Sprintf(pc.show, name))
		g.Expect(err).NotTo(HaveOccurred())
		return value
	}
	pods := []string{db.PodName(0), db.PodName(1)}
	for name, want := range pc.initialShown {
		for _, pod := range pods {
			g.Expect(show(g, pod, name)).To(Equal(want), "%s on %s from the start", name, pod)
		}
	}
	w := startWriter(db, insert, 1)
	defer w.finish()
	w.writesResume(g, 10)

	// Online: both servers, no pod restarted, the template unchanged.
	before := podsByName(g, db)
	templateHash := expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]
	started := time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Parameters = pc.reloaded })
	g.Eventually(func(g Gomega) {
		for _, pod := range pods {
			for name, want := range pc.reloadedShown {
				g.Expect(show(g, pod, name)).To(Equal(want), "%s on %s", name, pod)
			}
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
	t.Logf("parameters %s online_s=%.1f", tc.engine, time.Since(started).Seconds())
	for name, pod := range podsByName(g, db) {
		g.Expect(pod.UID).To(Equal(before[name].UID), "pod %s was replaced", name)
		g.Expect(restartCount(pod)).To(Equal(restartCount(before[name])), "pod %s restarted", name)
	}
	g.Expect(expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]).To(Equal(templateHash), "a setting taken online changed the pod template")

	// Refused: Degraded names the value; the servers keep theirs.
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Parameters = pc.refused })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		degraded := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonParametersRefused))
		g.Expect(degraded.Message).To(ContainSubstring("spec.parameters"))
		g.Expect(degraded.Message).To(ContainSubstring(pc.refusal))
	}, 3*time.Minute, time.Second).Should(Succeed())
	for _, pod := range pods {
		for name, want := range pc.reloadedShown {
			g.Expect(show(g, pod, name)).To(Equal(want), "%s on %s after a refused value", name, pod)
		}
	}

	// Needs a restart: the pods roll, replicas first, the primary after
	// a switchover.
	before = podsByName(g, db)
	started = time.Now()
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Parameters = pc.restart })
	rolled := func(primary, replica int) {
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
			g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
			g.Expect(db.Status.Instances).To(ConsistOf(servingFrom(db, primary, replica)))
			expectRolledOut(g, db, 2)
			for name, pod := range podsByName(g, db) {
				g.Expect(pod.UID).NotTo(Equal(before[name].UID), "pod %s was not restarted", name)
			}
		}, 5*time.Minute, time.Second).Should(Succeed(), func() string { return eventNotes(ns) })
	}
	rolled(1, 0)
	took := time.Since(started)
	for _, pod := range pods {
		g.Expect(show(g, pod, pc.restartName)).To(Equal(pc.restartSet), "%s on %s", pc.restartName, pod)
	}
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonRestartingForParameters)).To(ContainSubstring("spec.parameters waits for a restart"))
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonSwitchingOver)).To(ContainSubstring("a rollout is about to restart the primary's pod"))

	if tc.engine == dbpilotv1alpha1.EnginePostgres {
		// Dropped: lower than what the primary runs with.
		before = podsByName(g, db)
		changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Parameters = pc.reloaded })
		rolled(1, 0)
	}
	g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonFailingOver)).To(BeEmpty(), "a restart caused a failover")
	w.writesResume(g, 20)
	result := w.finish()
	primary, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer primary.close()
	lost := lostRows(g, primary, result.acknowledged)
	t.Logf("parameters %s restart_s=%.1f write_unavailable_s=%.1f rows_acknowledged=%d rows_lost=%d",
		tc.engine, took.Seconds(), result.longestGap.Seconds(), len(result.acknowledged), lost)
	g.Expect(lost).To(BeZero())
	// Settled: nothing rolls again, and nothing waits but, on
	// PostgreSQL, the dropped setting the servers keep at the former
	// primary's value until their next start.
	var waiting []string
	if tc.engine == dbpilotv1alpha1.EnginePostgres {
		waiting = []string{pc.restartName}
	}
	hash := expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]
	g.Consistently(func(g Gomega) {
		g.Expect(expectRolledOut(g, db, 2).Annotations[desired.AnnotationTemplateHash]).To(Equal(hash))
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		for _, instance := range db.Status.Instances {
			for _, name := range instance.PendingRestart {
				g.Expect(waiting).To(ContainElement(name), instance.Name)
			}
		}
	}, 20*time.Second, 2*time.Second).Should(Succeed())
}

// queryString reads one text value.
func queryString(ctx context.Context, session sqlSession, query string) (string, error) {
	var value string
	switch s := session.(type) {
	case pgSession:
		return value, s.conn.QueryRow(ctx, query).Scan(&value)
	case mysqlSession:
		return value, s.db.QueryRowContext(ctx, query).Scan(&value)
	}
	return "", fmt.Errorf("no session of %T", session)
}
