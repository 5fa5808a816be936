package controllers

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/internal/storageclass"
)

// policyOf turns spec.autopilot into the engine's policy, with the CRD's
// defaults for fields a client left out.
func (r *AutopilotRunner) policyOf(ctx context.Context, db *dbpilotv1alpha1.Database) autopilot.Policy {
	spec := db.Spec.Autopilot
	p := autopilot.Policy{
		MinReplicas: db.SpecReplicas(), MaxReplicas: db.SpecReplicas(),
		MinTier: db.SpecTier(), MaxTier: db.SpecTier(),
		CPUTarget: 0.7, MemoryTarget: 0.8, ConnectionTarget: 0.8,
		ScaleUpStabilization:   seconds(spec.ScaleUpStabilizationSeconds, 60),
		ScaleDownStabilization: seconds(spec.ScaleDownStabilizationSeconds, 600),
		TierCooldown:           seconds(spec.TierCooldownSeconds, 900),
		SettleTime:             r.SettleTime,
		FlapWindow:             r.FlapWindow,
	}
	if spec.Replicas != nil {
		p.MinReplicas, p.MaxReplicas = spec.Replicas.Min, spec.Replicas.Max
	}
	if spec.Tiers != nil {
		p.MinTier, p.MaxTier = spec.Tiers.Min, spec.Tiers.Max
	}
	if t := spec.Targets; t != nil {
		p.CPUTarget = percent(t.CPUUtilizationPercent, 0.7)
		p.MemoryTarget = percent(t.MemoryUtilizationPercent, 0.8)
		p.ConnectionTarget = percent(t.ConnectionUtilizationPercent, 0.8)
	}
	if s := spec.Storage; s != nil {
		p.StorageThreshold = percent(s.ThresholdPercent, 0.8)
		p.StorageStep = percent(s.StepPercent, 0.25)
		p.StorageMaxBytes = s.MaxSize.AsApproximateFloat64()
		p.StorageExpandable = r.expandable(ctx, db)
	}
	return p
}

func seconds(v *int32, def int32) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}

func percent(v int32, def float64) float64 {
	if v <= 0 {
		return def
	}
	return float64(v) / 100
}

// expandable reports whether the StorageClass of the Database's first volume
// allows expansion.
func (r *AutopilotRunner) expandable(ctx context.Context, db *dbpilotv1alpha1.Database) bool {
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ClaimName(0)}, claim); err != nil {
		return false
	}
	ok, err := storageclass.AllowsExpansion(ctx, r.Client, claim)
	return ok && err == nil
}

// record writes the decision into status.autopilot and the AutopilotReady
// and AnomalyDetected conditions, with the auto-pilot's field owner, only
// when they changed; a change of recommendation is also an Event.
func (r *AutopilotRunner) record(ctx context.Context, db *dbpilotv1alpha1.Database, in autopilot.Input, d autopilot.Decision, sourceErr error) error {
	mode := db.Spec.Autopilot.Mode
	status := &dbpilotv1alpha1.AutopilotStatus{Mode: mode}
	previousMode := dbpilotv1alpha1.AutopilotOff
	if previous := db.Status.Autopilot; previous != nil {
		status.LastDecision = previous.LastDecision
		status.RecentDecisions = previous.RecentDecisions
		status.Recommendation = previous.Recommendation
		previousMode = previous.Mode
	}
	if mode == dbpilotv1alpha1.AutopilotAuto && previousMode != dbpilotv1alpha1.AutopilotAuto {
		r.applyStanding(ctx, db, status, in.Now)
	}
	conditions := autopilotConditions(db, d, sourceErr)
	// A hibernating Database leaves nothing to decide, which is no hold
	// to alert on.
	holding := ""
	if ready := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionAutopilotReady); ready != nil && ready.Status != metav1.ConditionTrue &&
		ready.Reason != autopilot.ReasonStopped {
		holding = ready.Reason
	}
	setAutopilotHolding(client.ObjectKeyFromObject(db), holding)

	// Taking back what the cluster cannot place needs no metrics: a lone
	// pod waiting for a node reports none.
	if (sourceErr == nil && d.MetricsReady) || d.TakesBack() {
		r.recommend(ctx, db, status, in, d)
		if d.NextEligible.After(in.Now) {
			status.NextEligibleTime = ptr.To(metav1.NewTime(d.NextEligible.Truncate(time.Second)))
		}
	}
	applied := *db.DeepCopy()
	applied.Status.Autopilot = status
	status.EffectiveReplicas = ptr.To(applied.EffectiveReplicas())
	status.EffectiveTier = applied.EffectiveTier()

	if wasAnomalous(db) != (len(d.Anomalies) > 0) && len(d.Anomalies) > 0 {
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonAnomaly, "Detect", "%s", strings.Join(d.Anomalies, "; "))
	}
	return r.apply(ctx, db, status, conditions)
}

// recommend makes d the recommendation when it differs from the standing
// one, with its decision, metric and, for a change of size, its Event. A
// hold that only waits (autopilot.Decision.Waits) leaves a standing
// recommendation as it is.
func (r *AutopilotRunner) recommend(ctx context.Context, db *dbpilotv1alpha1.Database, status *dbpilotv1alpha1.AutopilotStatus, in autopilot.Input, d autopilot.Decision) {
	if d.Waits() && status.Recommendation != nil {
		return
	}
	mode := db.Spec.Autopilot.Mode
	rec := &dbpilotv1alpha1.AutopilotRecommendation{Replicas: ptr.To(d.Replicas), Tier: d.Tier}
	if d.StorageBytes > 0 {
		rec.StorageSize = resource.NewQuantity(int64(d.StorageBytes), resource.BinarySI)
	}
	if d.MaxConnections > 0 {
		rec.MaxConnections = ptr.To(d.MaxConnections)
	}
	if !equality.Semantic.DeepEqual(rec, status.Recommendation) {
		status.Recommendation = rec
		status.LastDecision = &dbpilotv1alpha1.AutopilotDecision{
			Time: metav1.NewTime(in.Now), Action: string(d.Action), Reason: d.Reason, Message: d.Message, Signals: signalStrings(d.Signals),
		}
		status.RecentDecisions = recentDecisions(*status.LastDecision, status.RecentDecisions)
		autopilotDecisions.WithLabelValues(db.Namespace, db.Name, string(d.Action), d.Reason).Inc()
		if d.Changed(in.Current) {
			verb := "Recommends"
			if mode == dbpilotv1alpha1.AutopilotAuto {
				verb = "Applies"
				r.noteChange(db, autopilot.Size{Replicas: in.Current.Replicas, Tier: in.Current.Tier}, autopilot.Size{Replicas: d.Replicas, Tier: d.Tier}, in.Now)
			}
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonAutopilot, string(d.Action), "%s %s: %s", verb, d.Action, d.Message)
			ctrl.LoggerFrom(ctx).Info(verb+" a change of size", "action", d.Action, "reason", d.Reason,
				"replicas", d.Replicas, "tier", d.Tier, "why", d.Message)
		}
	}
}

// recentDecisions puts the newest decision first and keeps the last
// AutopilotRecentDecisions.
func recentDecisions(newest dbpilotv1alpha1.AutopilotDecision, before []dbpilotv1alpha1.AutopilotDecision) []dbpilotv1alpha1.AutopilotDecision {
	recent := append([]dbpilotv1alpha1.AutopilotDecision{newest}, before...)
	return recent[:min(len(recent), dbpilotv1alpha1.AutopilotRecentDecisions)]
}

// applyStanding records that turning Auto on applies the recommendation
// made in Recommend mode, when it differs from the spec: a change of size
// like any other, with its Event, and the start of its flap window.
func (r *AutopilotRunner) applyStanding(ctx context.Context, db *dbpilotv1alpha1.Database, status *dbpilotv1alpha1.AutopilotStatus, now time.Time) {
	if status.Recommendation == nil || status.LastDecision == nil {
		return
	}
	applied := db.DeepCopy()
	applied.Status.Autopilot = status
	before := autopilot.Size{Replicas: db.SpecReplicas(), Tier: db.SpecTier()}
	after := autopilot.Size{Replicas: applied.EffectiveReplicas(), Tier: applied.EffectiveTier()}
	if after == before {
		return
	}
	r.noteChange(db, before, after, now)
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonAutopilot, status.LastDecision.Action,
		"Applies %s, recommended at %s, now that the auto-pilot is in Auto mode: %s", status.LastDecision.Action,
		status.LastDecision.Time.UTC().Format(time.RFC3339), status.LastDecision.Message)
	ctrl.LoggerFrom(ctx).Info("Applies the standing recommendation in Auto mode", "action", status.LastDecision.Action,
		"replicas", after.Replicas, "tier", after.Tier)
}

// autopilotConditions are AutopilotReady (fresh, complete metrics) and
// AnomalyDetected, carried over unchanged when their status did not change.
func autopilotConditions(db *dbpilotv1alpha1.Database, d autopilot.Decision, sourceErr error) []metav1.Condition {
	var conditions []metav1.Condition
	for _, cond := range db.Status.Conditions {
		if cond.Type == dbpilotv1alpha1.ConditionAutopilotReady || cond.Type == dbpilotv1alpha1.ConditionAnomalyDetected {
			conditions = append(conditions, cond)
		}
	}
	set := func(condType string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&conditions, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: db.Generation})
	}
	switch {
	case sourceErr != nil:
		set(dbpilotv1alpha1.ConditionAutopilotReady, metav1.ConditionFalse, dbpilotv1alpha1.ReasonPrometheusUnavailable, "Holding: "+sourceErr.Error())
	case !d.MetricsReady && d.TakesBack():
		// Acting without metrics: why they are missing, the next hold
		// says.
	case !d.MetricsReady:
		set(dbpilotv1alpha1.ConditionAutopilotReady, metav1.ConditionFalse, d.Reason, "Holding: "+d.Message)
	default:
		set(dbpilotv1alpha1.ConditionAutopilotReady, metav1.ConditionTrue, dbpilotv1alpha1.ReasonMetricsReady, "Metrics are fresh and complete")
	}
	if len(d.Anomalies) > 0 {
		set(dbpilotv1alpha1.ConditionAnomalyDetected, metav1.ConditionTrue, dbpilotv1alpha1.ReasonOutsideBaseline, strings.Join(d.Anomalies, "; "))
	} else if d.MetricsReady {
		set(dbpilotv1alpha1.ConditionAnomalyDetected, metav1.ConditionFalse, dbpilotv1alpha1.ReasonWithinBaseline, "Throughput and connections are within their usual range")
	}
	return conditions
}

func wasAnomalous(db *dbpilotv1alpha1.Database) bool {
	return meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAnomalyDetected)
}

// signalStrings renders the decision's numbers for status, in a stable form.
func signalStrings(signals map[string]float64) map[string]string {
	out := make(map[string]string, len(signals))
	keys := make([]string, 0, len(signals))
	for k := range signals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = fmt.Sprintf("%.3g", math.Round(signals[k]*1000)/1000)
	}
	return out
}

// apply server-side applies the auto-pilot's part of the status when it
// differs from the stored one.
func (r *AutopilotRunner) apply(ctx context.Context, db *dbpilotv1alpha1.Database, status *dbpilotv1alpha1.AutopilotStatus, conditions []metav1.Condition) error {
	current := db.Status.Autopilot
	var currentConditions []metav1.Condition
	for _, cond := range db.Status.Conditions {
		if cond.Type == dbpilotv1alpha1.ConditionAutopilotReady || cond.Type == dbpilotv1alpha1.ConditionAnomalyDetected {
			currentConditions = append(currentConditions, cond)
		}
	}
	if equality.Semantic.DeepEqual(current, status) && equality.Semantic.DeepEqual(currentConditions, conditions) {
		return nil
	}
	content := map[string]any{}
	if status != nil {
		ap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
		if err != nil {
			return fmt.Errorf("converting auto-pilot status: %w", err)
		}
		content["autopilot"] = ap
	}
	if len(conditions) > 0 {
		list := make([]any, 0, len(conditions))
		for i := range conditions {
			c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conditions[i])
			if err != nil {
				return fmt.Errorf("converting condition: %w", err)
			}
			list = append(list, c)
		}
		content["conditions"] = list
	}
	return applyStatus(ctx, r.Client, db, content, AutopilotFieldOwner)
}

// clear removes the auto-pilot's status and conditions once it is off.
func (r *AutopilotRunner) clear(ctx context.Context, db *dbpilotv1alpha1.Database) error {
	setAutopilotHolding(client.ObjectKeyFromObject(db), "")
	if db.Status.Autopilot == nil && meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAutopilotReady) == nil &&
		meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionAnomalyDetected) == nil {
		return nil
	}
	if !db.DeletionTimestamp.IsZero() {
		return nil
	}
	return r.apply(ctx, db, nil, nil)
}
