package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/loadexporter"
	"github.com/dbpilot/dbpilot/internal/options"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

// TestAutopilotScalesWithinBounds runs the auto-pilot against a real
// Prometheus scraping a synthetic exporter that turns a demand into the
// metrics of the Database's pods. Read pressure raises replicas, write
// pressure then raises the tier, both within the bounds; Recommend mode only
// records; when Prometheus stops, the auto-pilot holds and says why, and
// when it is back, it acts again.
func TestAutopilotScalesWithinBounds(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "autopilot")

	exporter, err := loadexporter.Start(loadexporter.DatabasePods(k8sClient, ns, "shop"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = exporter.Stop() })
	prom, err := promserver.Start(ctx, promserver.Config{ScrapeTargets: []string{exporter.Addr}, ScrapeInterval: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(prom.Stop()).To(Succeed()) })

	opts := options.Default()
	opts.WatchNamespaces = ns
	opts.LeaderElection = false
	opts.PrometheusURL = prom.URL
	opts.PrometheusRateWindow = 5 * time.Second
	opts.AutopilotInterval = time.Second
	opts.AutopilotSettleTime = 6 * time.Second
	startOperatorWith(t, restConfig, opts)

	db := newDatabase(ns, "shop", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{
		Mode:                          dbpilotv1alpha1.AutopilotRecommend,
		Replicas:                      &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3},
		Tiers:                         &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierMedium},
		ScaleUpStabilizationSeconds:   ptr.To[int32](2),
		ScaleDownStabilizationSeconds: ptr.To[int32](3600),
		TierCooldownSeconds:           ptr.To[int32](0),
	}
	exporter.SetDemand(autopilot.Load{Read: 1.0, Write: 0.05})
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)).To(BeTrue(), "conditions %+v", db.Status.Conditions)
	}, convergeTimeout, pollInterval).Should(Succeed())

	// Read pressure over both pods: Recommend mode records 3 replicas and
	// changes nothing.
	exporter.SetDemand(autopilot.Load{Read: 1.6, Write: 0.05})
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Autopilot).NotTo(BeNil())
		g.Expect(db.Status.Autopilot.Recommendation).NotTo(BeNil())
		g.Expect(*db.Status.Autopilot.Recommendation.Replicas).To(Equal(int32(3)))
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonReadPressure))
		// A scrape that came late leaves one cycle without the pods'
		// metrics: holding then is right, and passes.
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)).To(BeTrue(), "conditions %+v", db.Status.Conditions)
		g.Expect(gathered(g, "dbpilot_autopilot_holding", map[string]string{"namespace": ns, "database": "shop"})).To(BeZero(), "not holding")
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(gathered(g, "dbpilot_autopilot_decisions_total", map[string]string{"namespace": ns, "database": "shop", "action": string(autopilot.ActionScaleUp), "reason": autopilot.ReasonReadPressure})).
		To(BeNumerically(">=", 1), "the decision is counted")
	g.Consistently(func(g Gomega) {
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(2)), "Recommend mode acts")
	}, 3*time.Second, pollInterval).Should(Succeed())

	// Auto mode applies it. The mode is switched while the recommendation
	// stands: a status write since it was read makes the update conflict,
	// and it is tried again.
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Autopilot.Recommendation.Replicas).To(Equal(ptr.To[int32](3)))
		db.Spec.Autopilot.Mode = dbpilotv1alpha1.AutopilotAuto
		g.Expect(k8sClient.Update(ctx, db)).To(Succeed())
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(3)))
		fetch(g, db)
		g.Expect(db.Status.ReadyReplicas).To(Equal(int32(3)))
		g.Expect(*db.Spec.Replicas).To(Equal(int32(2)), "the auto-pilot never edits the spec")
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventNotes(g, db) }, convergeTimeout, pollInterval).
		Should(ContainElement(ContainSubstring("now that the auto-pilot is in Auto mode")), "applying the standing recommendation is an Event")

	// Write pressure on the primary: a bigger tier, not more replicas (the
	// bound is 3 anyway), and fewer of them; the pods it no longer needs
	// stay until every pod runs the bigger tier.
	exporter.SetDemand(autopilot.Load{Read: 0.3, Write: 0.9})
	var early []string
	g.Eventually(func(g Gomega) {
		if *statefulSetOf(g, db).Spec.Replicas < 3 {
			for _, pod := range podsOf(g, db) {
				if pod.Annotations[desired.AnnotationTier] != string(dbpilotv1alpha1.TierMedium) {
					early = append(early, pod.Name)
				}
			}
		}
		fetch(g, db)
		g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierMedium))
		g.Expect(db.Status.Autopilot.LastDecision.Action).To(Equal(string(autopilot.ActionTierUp)))
		g.Expect(db.Status.Autopilot.LastDecision.Reason).To(Equal(autopilot.ReasonWritePressure))
		g.Expect(db.Status.Autopilot.LastDecision.Signals).To(HaveKey("writeLoad"))
	}, 3*convergeTimeout, pollInterval).Should(Succeed())
	t.Log(db.Status.Autopilot.LastDecision.Message)
	// kubectl get -o wide shows the mode and the last decision.
	g.Eventually(func(g Gomega) {
		lines := strings.Split(kubectl(g, "get", "database", "--namespace", ns, "shop", "-o", "wide"), "\n")
		g.Expect(strings.Fields(lines[0])).To(ContainElements("AUTOPILOT", "LAST-ACTION", "REASON"))
		fetch(g, db)
		last := db.Status.Autopilot.LastDecision
		g.Expect(strings.Fields(lines[1])).To(ContainElements("Auto", last.Action, last.Reason))
	}, convergeTimeout, pollInterval).Should(Succeed())
	// status.autopilot.recentDecisions keeps them all for an audit, newest
	// first, with their numbers.
	recent := db.Status.Autopilot.RecentDecisions
	g.Expect(recent).NotTo(BeEmpty())
	g.Expect(recent[0]).To(Equal(*db.Status.Autopilot.LastDecision))
	g.Expect(recent).To(ContainElement(And(HaveField("Action", string(autopilot.ActionScaleUp)),
		HaveField("Reason", autopilot.ReasonReadPressure), HaveField("Signals", HaveKey("readLoad")))), "the read decision is kept")
	for i := 1; i < len(recent); i++ {
		g.Expect(recent[i].Time.After(recent[i-1].Time.Time)).To(BeFalse(), "newest first: %+v", recent)
	}
	waitConverged(g, db)
	sts := statefulSetOf(g, db)
	g.Expect(sts.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("2Gi"))
	g.Expect(*sts.Spec.Replicas).To(Equal(*db.Status.Autopilot.EffectiveReplicas))
	g.Expect(*sts.Spec.Replicas).To(BeNumerically("<", 3), "a medium primary carries the writes without the third pod")
	g.Expect(early).To(BeEmpty(), "pods went before the bigger tier had rolled out")
	g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonAutopilot))

	// Prometheus goes away: the auto-pilot holds and the condition says why.
	g.Expect(prom.Halt()).To(Succeed())
	exporter.SetDemand(autopilot.Load{Read: 5, Write: 3})
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		ready := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(BeEquivalentTo("False"))
		g.Expect(ready.Reason).To(Equal(dbpilotv1alpha1.ReasonPrometheusUnavailable))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(gathered(g, "dbpilot_autopilot_holding", map[string]string{"namespace": ns, "database": "shop", "reason": dbpilotv1alpha1.ReasonPrometheusUnavailable})).
		To(Equal(1.0), "dbpilot_autopilot_holding says why")
	replicas, tier := *statefulSetOf(g, db).Spec.Replicas, db.Status.Tier
	g.Consistently(func(g Gomega) {
		fetch(g, db)
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(replicas))
		g.Expect(db.Status.Tier).To(Equal(tier))
	}, 5*time.Second, pollInterval).Should(Succeed())

	// Prometheus is back, on the same address: the auto-pilot is ready
	// again and acts on what it reads, the load that came meanwhile.
	g.Expect(prom.Resume()).To(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)).To(BeTrue(), "conditions %+v", db.Status.Conditions)
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(3)), "scaled up after the outage")
	}, convergeTimeout, pollInterval).Should(Succeed())
	// It may hold again at once for another reason (the third pod it
	// asked for is still coming), never for Prometheus.
	g.Eventually(func(g Gomega) float64 {
		return gathered(g, "dbpilot_autopilot_holding", map[string]string{"namespace": ns, "database": "shop", "reason": dbpilotv1alpha1.ReasonPrometheusUnavailable})
	}, convergeTimeout, pollInterval).Should(BeZero(), "no longer holding for Prometheus")
	t.Logf("after the outage: %s", db.Status.Autopilot.LastDecision.Message)

	// Off clears the auto-pilot's status, and the Database goes back to its
	// spec: 2 small pods.
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Autopilot.Mode = dbpilotv1alpha1.AutopilotOff })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Autopilot).To(BeNil())
		g.Expect(meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady)).To(BeNil())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)).To(BeTrue(), "the reconciler's conditions stay")
	}, convergeTimeout, pollInterval).Should(Succeed())
	waitConverged(g, db)
	g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierSmall))
	g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(2)))
	g.Expect(gathered(g, "dbpilot_autopilot_holding", map[string]string{"namespace": ns, "database": "shop"})).To(BeZero(), "an auto-pilot turned off holds nothing")
}

// gathered sums the series of a family in the registry the operators of
// this process serve on their metrics endpoint whose labels include these.
func gathered(g Gomega, name string, labels map[string]string) float64 {
	sum := 0.0
	for _, metric := range gatheredSeries(g, name, labels) {
		sum += metric.GetGauge().GetValue() + metric.GetCounter().GetValue()
	}
	return sum
}

// gatheredSeries are the series of a family in that registry whose labels
// include these.
func gatheredSeries(g Gomega, name string, labels map[string]string) []*dto.Metric {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var matching []*dto.Metric
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
	series:
		for _, metric := range family.GetMetric() {
			have := map[string]string{}
			for _, pair := range metric.GetLabel() {
				have[pair.GetName()] = pair.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			matching = append(matching, metric)
		}
	}
	return matching
}
