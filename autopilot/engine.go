package autopilot

import (
	"fmt"
	"math"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

const (
	// staleAfter is how old the newest sample may be before the auto-pilot
	// holds: acting on old numbers is acting blind.
	staleAfter = 2 * time.Minute
	// maxGap is the longest silence between two samples that still counts as
	// continuous data for a scale-down window.
	maxGap = 45 * time.Second
	// trendWindow is how far back the trend of the load is fitted.
	trendWindow = 5 * time.Minute
	// ReplicaLeadTime is how long a new replica takes to clone and catch up;
	// TierLeadTime how long a tier change takes to roll. Rising load is
	// projected this far ahead, so the change is ready before saturation.
	ReplicaLeadTime = 2 * time.Minute
	TierLeadTime    = 3 * time.Minute
	// downHeadroom: a smaller size must run the window's peak load within
	// the target, with 2 % of slack for measurement noise (a peak measured at
	// exactly the target must not pin a Database to a size twice as big);
	// scale-ups start only at upTolerance, well above it.
	downHeadroom = 1.02
	// upTolerance: a scale-up starts only above the target by this factor,
	// while a scale-down may go right up to the target, so sizes at the
	// target hold still (the HPA's tolerance, applied to the hottest pod).
	upTolerance = 1.1
	// noiseTolerance widens upTolerance by this share of the pods' measured
	// CPU noise: noisy samples cross a fixed threshold by chance, and a
	// size that fits the de-noised peak would be undone by them.
	noiseTolerance = 0.25
	// connectionMemoryShare: connections are raised only while memory use
	// stays under this share of the memory target.
	connectionMemoryShare = 0.75
	// rebalanceLoadShare: a tier-down that adds replicas waits until the
	// load is at least this share of the window's peak.
	rebalanceLoadShare = 0.8
	// DefaultFlapWindow is how long after a change in one direction a
	// change in the other direction counts as a flap, unless the policy
	// says; scale-downs wait it out.
	DefaultFlapWindow = 10 * time.Minute
)

// Decide returns the auto-pilot's decision for one Database. It is a pure
// function of its input: the same input gives the same decision.
func Decide(in Input) Decision {
	p := in.Policy
	cur := Size{Replicas: in.Current.Replicas, Tier: in.Current.Tier}
	d := Decision{
		Action: ActionHold, Replicas: cur.Replicas, Tier: cur.Tier, StorageBytes: in.Current.StorageBytes,
		MaxConnections: raisedConnections(in.Current), Signals: map[string]float64{}, NextEligible: in.Now,
	}

	if in.Current.Stopped {
		return hold(d, ReasonStopped, "No pod runs (the Database hibernates): nothing to measure or resize until it resumes")
	}
	// Out of bounds (the owner moved them): come back inside at once.
	if bounded := clampSize(cur, p); bounded != cur {
		d.Replicas, d.Tier = bounded.Replicas, bounded.Tier
		d.Action, d.Reason = actionBetween(cur, bounded), ReasonAtBounds
		d.Message = fmt.Sprintf("%d %s pods are outside the bounds %d-%d, %s-%s", cur.Replicas, cur.Tier, p.MinReplicas, p.MaxReplicas, p.MinTier, p.MaxTier)
		return d
	}

	latest, ok := newest(in.History)
	var unready Decision
	switch {
	case !ok:
		unready = hold(d, ReasonMetricsMissing, "No metrics for this Database yet")
	case in.Now.Sub(latest.Time) > staleAfter:
		unready = hold(d, ReasonMetricsStale, fmt.Sprintf("Newest metrics are %s old", in.Now.Sub(latest.Time).Round(time.Second)))
	case !complete(latest):
		unready = hold(d, ReasonMetricsIncomplete, fmt.Sprintf("Metrics cover %d of %d pods", len(latest.Pods), latest.Replicas))
	}
	if unready.Reason != "" {
		// What the cluster cannot place is taken back on no metrics: a
		// lone pod that waits for a node reports none.
		if back, ok := takeBackUnplaceable(d, &in.Policy, cur); ok {
			return back
		}
		return unready
	}
	d.MetricsReady = true
	d.Anomalies = detectAnomalies(in.History)

	m := LearnModel(in.History)
	load := m.EstimateLoad(latest)
	// Sizes differ before and after a change: up, trust only what came
	// after it.
	// Trends and the scale-down peak read each sample's load from its
	// query rates, at the cost per query fitted over the scale-down window
	// (leaving out samples that mix two sizes): CPU is noisy, counters
	// are not. Scale-ups read the newest CPU itself.
	est := m.newEstimator(in.History, in.Now, p.ScaleDownStabilization, span{From: in.Last.DirectionTime, To: settledAt(in)})
	trend, _ := est.loadTrend(in.History, in.Now, span{To: settledAt(in)}, minTrendRise)
	ahead := leadAhead(load, trend)
	util := m.Predict(load, cur.Replicas, cur.Tier)
	memory, connections, volume := pressures(latest)
	d.Signals = map[string]float64{
		"writeLoad": round(load.Write), "readLoad": round(load.Read), "readOnReplicasShare": round(load.ReplicaOnly),
		"writeLoadAhead": round(ahead.Write), "readLoadAhead": round(ahead.Read),
		"primaryUtilization": round(util.Primary), "replicaUtilization": round(util.Replica),
		"memoryUtilization": round(memory), "connectionUtilization": round(connections), "volumeUtilization": round(volume),
		"replayShare": round(m.ReplayShare),
	}

	if back, ok := takeBackUnplaceable(d, &in.Policy, cur); ok {
		return back
	}

	if in.Current.Busy != "" {
		return hold(d, ReasonBusy, "Waiting for "+in.Current.Busy+" to finish")
	}
	if settled := settledAt(in); in.Now.Before(settled) {
		d.NextEligible = settled
		return hold(d, ReasonSettling, "Waiting for the metrics to reflect the last change")
	}
	if up, ok := decideUp(d, in, est, cur, load, ahead, trend, memory, connections); ok {
		return decideStorage(up, in, volume)
	}
	return decideStorage(decideDown(d, in, est, cur, load), in, volume)
}

// decideUp scales up when the current size breaches its targets, now or
// within the lead time, and the breach has lasted the stabilization window.
func decideUp(d Decision, in Input, est estimator, cur Size, load, ahead, trend Load, memory, connections float64) (Decision, bool) {
	p, m := in.Policy, est.m
	noise := est.cpuNoise(in.History, in.Now, p.ScaleDownStabilization)
	upTarget := p.CPUTarget * upTolerance * (1 + noiseTolerance*noise)
	measuredBreach := !m.fits(load, cur, upTarget)
	predictedBreach := !m.fits(ahead, cur, upTarget)
	memoryBreach := memory > p.MemoryTarget
	connectionBreach := connections > p.ConnectionTarget
	if !measuredBreach && !predictedBreach && !memoryBreach && !connectionBreach {
		return d, false
	}
	wait := scaleUpWait(in, cur, upTarget, noise)
	if since := m.breachStart(in, trend, upTarget); in.Now.Sub(since) < wait {
		d.NextEligible = since.Add(wait)
		return hold(d, ReasonStabilizing, fmt.Sprintf("Above target since %s; scaling up after %s", since.Format(time.RFC3339), wait)), true
	}

	// Connections saturate while CPU and memory have room: raise the
	// connection limit within the tier's limit before anything bigger.
	if connectionBreach && !measuredBreach && !predictedBreach && memory < p.MemoryTarget*connectionMemoryShare {
		if raised, ok := raiseConnections(in.Current); ok {
			d.MaxConnections, d.Action, d.Reason = raised, ActionRaiseConnections, ReasonConnections
			d.Message = fmt.Sprintf("%s: %.0f%% of max_connections in use with memory at %.0f%%; max_connections %d -> %d",
				ReasonConnections, 100*connections, 100*memory, in.Current.MaxConnections, raised)
			return d, true
		}
	}
	// Saturated pods hide how much more they are asked for: size for more,
	// so the step is big enough.
	latest := in.History[len(in.History)-1]
	sizing := Unmasked(ahead, latest)
	// A lone pod's tier step costs two pods of the new tier; replicas of
	// its own tier may serve for less, unless it is saturated and the load
	// they are sized for is a guess.
	next, byReplicas := upSteps(m, sizing, p, cur, pairsLonePod(in, cur) && !saturatedPod(latest))
	if (memoryBreach || connectionBreach) && !measuredBreach && !predictedBreach && cur.Tier.Index() < p.MaxTier.Index() {
		// Memory or connections, not CPU: only a bigger tier brings more.
		next.Tier = dbpilotv1alpha1.TierAt(cur.Tier.Index() + 1)
	}
	reason := ReasonReadPressure
	if load.Write >= load.Read/float64(max(1, cur.Replicas)) {
		reason = ReasonWritePressure
	}
	switch {
	case memoryBreach && !measuredBreach && !predictedBreach:
		reason = ReasonMemory
	case connectionBreach && !measuredBreach && !predictedBreach:
		reason = ReasonConnections
	case !measuredBreach:
		reason = ReasonPredicted
	}
	if wait := in.Last.Tier.Add(p.TierCooldown); next.Tier != cur.Tier && !in.Last.Tier.IsZero() && in.Now.Before(wait) {
		// Cooling down from the last tier change: replicas may still
		// help; the tier waits.
		if next = byReplicas; next == cur {
			d.NextEligible = wait
			return hold(d, ReasonCooldown, fmt.Sprintf("A tier change is due (%s) but the last one was at %s", reason, in.Last.Tier.Format(time.RFC3339))), true
		}
	}
	if next == cur {
		return hold(d, ReasonAtBounds, fmt.Sprintf("Above target (%s) but already at the most the bounds allow: %d %s pods", reason, p.MaxReplicas, p.MaxTier)), true
	}
	note := ""
	if next.Tier != cur.Tier && pairsLonePod(in, cur) {
		// A lone pod's new tier would restart it with nothing to switch
		// over to: add a replica of the new tier with it, which clones
		// while the pod serves; the primary then switches over to it
		// before it restarts.
		next.Replicas = 2
		note = " (a replica of the new tier with it, for the primary to switch over to instead of restarting the only pod)"
	}
	d.Replicas, d.Tier = next.Replicas, next.Tier
	if next.Tier != cur.Tier {
		// A new tier brings its own connection limit.
		d.MaxConnections = 0
	}
	d.Action, d.Reason = actionBetween(cur, next), reason
	u := m.Predict(load, cur.Replicas, cur.Tier)
	d.Message = fmt.Sprintf("%s: primary at %.0f%%, replicas at %.0f%% of target %.0f%% (write load %.2f, read load %.2f, %.2f/%.2f ahead); %d %s pods -> %d %s pods",
		reason, 100*u.Primary, 100*u.Replica, 100*p.CPUTarget, load.Write, load.Read, ahead.Write, ahead.Read, cur.Replicas, cur.Tier, next.Replicas, next.Tier)
	if next.Replicas < cur.Replicas {
		d.Message += ", the pods it no longer needs staying until the new tier has rolled out"
	}
	d.Message += note
	return d, true
}

// upSteps returns the scale-up step from cur towards the cheapest size that
// runs load within the policy's target, and the step by replicas alone (for
// when the tier cannot change yet). When the cheapest size has a bigger
// tier, the step is one tier up with as few replicas as fit at it, down to
// half the current ones: the pods a bigger tier makes unneeded go only once
// it has rolled out (the reconciler keeps them until then), so capacity
// never dips. Otherwise it is as few more replicas (at most double) as fit.
// When the tier step is paired (it brings a replica of the new tier, two
// bigger pods in all), replicas of the current tier that fit for no more
// are the step instead.
func upSteps(m Model, load Load, p Policy, cur Size, paired bool) (next, byReplicas Size) {
	global, _ := m.Cheapest(load, p, cur, p.CPUTarget)
	more, fit := m.Cheapest(load, stepPolicy(p, cur, cur.Tier), cur, p.CPUTarget)
	if global.Tier.Index() <= cur.Tier.Index() {
		return more, more
	}
	if paired && fit && more.Cost() <= 2*Capacity(dbpilotv1alpha1.TierAt(cur.Tier.Index()+1)) {
		return more, more
	}
	// Waiting for a tier, replicas are worth adding only if they are
	// enough: a write load needs the bigger primary.
	byReplicas = cur
	if fit {
		byReplicas = more
	}
	step := stepPolicy(p, cur, dbpilotv1alpha1.TierAt(cur.Tier.Index()+1))
	step.MinReplicas = max(p.MinReplicas, (cur.Replicas+1)/2)
	if global.Replicas <= cur.Replicas {
		step.MaxReplicas = cur.Replicas
	}
	next, _ = m.Cheapest(load, step, cur, p.CPUTarget)
	return next, byReplicas
}

// pairsLonePod reports whether a tier up of cur must bring a replica of the
// new tier: one pod that does not grow in place would otherwise restart
// with nothing to switch over to.
func pairsLonePod(in Input, cur Size) bool {
	return cur.Replicas == 1 && in.Policy.MaxReplicas > 1 && !in.Current.GrowsInPlace
}

// stepPolicy bounds a scale-up step from cur: tier t, and from the current
// replicas to at most double them, within the policy's bounds.
func stepPolicy(p Policy, cur Size, t dbpilotv1alpha1.Tier) Policy {
	p.MinReplicas, p.MaxReplicas = cur.Replicas, min(p.MaxReplicas, cur.Replicas+max(1, cur.Replicas))
	p.MinTier, p.MaxTier = t, t
	return p
}

// decideDown scales down, replicas before tiers, one step at a time, when
// the peak load over the whole stabilization window fits a cheaper size with
// headroom, and the window's data is complete.
func decideDown(d Decision, in Input, est estimator, cur Size, load Load) Decision {
	p, m := in.Policy, est.m
	flapWindow := p.flapWindow()
	if in.Last.Direction > 0 && in.Now.Sub(in.Last.DirectionTime) < flapWindow {
		d.NextEligible = in.Last.DirectionTime.Add(flapWindow)
		return hold(d, ReasonWithinTargets, fmt.Sprintf("Within targets; no scale-down within %s of a scale-up", flapWindow))
	}
	window := p.ScaleDownStabilization
	if in.Last.DirectionTime.IsZero() {
		// Nothing is known of this Database's rhythm yet (new, or the
		// auto-pilot just turned on): the first scale-down waits longer.
		window += flapWindow
	}
	settling := span{From: in.Last.DirectionTime, To: settledAt(in)}
	// A roll to a new tier mixes two sizes in the samples until it has
	// settled: they are left out of the peak. Added or removed replicas
	// do not (only the pods that exist are measured), and their samples
	// may hold the very load that called for them.
	var rolled span
	if !in.Last.Tier.IsZero() && in.Last.Tier.Equal(in.Last.DirectionTime) {
		rolled = settling
	}
	measured, covered := est.windowPeak(in.History, in.Now, window, rolled)
	// A smaller size must also hold the load the trend brings over the flap
	// window, or a scale-down under growing load is undone minutes later; a
	// smaller tier over the tier cooldown too, since nothing can undo it
	// sooner. Load is measured in units that do not depend on the size, so
	// the trend spans the last change, skipping only the samples taken
	// while it settled.
	// Any significant sustained rise counts here, however small: read from
	// the rates it is no noise, and a scale-down into it is undone.
	trend, known := est.loadTrend(in.History, in.Now, settling, 0)
	switch {
	case !covered:
		return hold(d, ReasonWithinTargets, fmt.Sprintf("Within targets; a scale-down needs %s of complete metrics", window))
	case !known:
		// After a rollout most of the trend window is skipped: a
		// scale-down into a rising load would be undone.
		return hold(d, ReasonWithinTargets, "Within targets; a scale-down waits until the trend of the load is known")
	}
	peak := project(measured, trend, flapWindow, flapWindow)
	tierCooldown := max(flapWindow, p.TierCooldown)
	tierPeak := project(measured, trend, tierCooldown, tierCooldown)
	want, ok := m.Cheapest(peak, p, cur, p.CPUTarget*downHeadroom)
	if !ok || want.Cost() >= cur.Cost() {
		return hold(d, ReasonWithinTargets, "Within targets")
	}
	next := cur
	switch {
	case want.Replicas < cur.Replicas && m.fits(peak, Size{Replicas: cur.Replicas - 1, Tier: cur.Tier}, p.CPUTarget*downHeadroom):
		// Down to the fewest replicas that still fit at this tier, at most
		// half of them in one step.
		next.Replicas = cur.Replicas - 1
		for n := next.Replicas - 1; n >= max(want.Replicas, p.MinReplicas, (cur.Replicas+1)/2); n-- {
			if !m.fits(peak, Size{Replicas: n, Tier: cur.Tier}, p.CPUTarget*downHeadroom) {
				break
			}
			next.Replicas = n
		}
	case want.Tier.Index() < cur.Tier.Index():
		// One tier down, with more replicas (at most double) when the
		// smaller pods need them and still cost less: the new replicas
		// clone while the bigger pods serve.
		step := stepPolicy(p, cur, dbpilotv1alpha1.TierAt(cur.Tier.Index()-1))
		if load.Write+load.Read < rebalanceLoadShare*(measured.Write+measured.Read) {
			// The load has fallen well below the window's peak: replicas
			// will go soon, more cheaply than by restarting every pod.
			step.MaxReplicas = cur.Replicas
		}
		smaller, ok := m.Cheapest(tierPeak, step, cur, p.CPUTarget*downHeadroom)
		if !ok || smaller.Cost() >= cur.Cost() {
			return hold(d, ReasonWithinTargets, "Within targets")
		}
		if wait := in.Last.Tier.Add(p.TierCooldown); !in.Last.Tier.IsZero() && in.Now.Before(wait) {
			d.NextEligible = wait
			return hold(d, ReasonCooldown, "Over-provisioned, but the last tier change was too recent")
		}
		if smaller.Replicas == 1 && cur.Replicas == 1 && !in.Current.ShrinksInPlace {
			// Restarting the only pod would leave the Database without
			// writes or reads meanwhile: a replica of the smaller tier
			// comes first, at no more cost, for the primary to switch
			// over to; it goes by the next scale-down.
			paired := Size{Replicas: 2, Tier: smaller.Tier}
			if p.MaxReplicas < 2 || paired.Cost() > cur.Cost() {
				return hold(d, ReasonWithinTargets, fmt.Sprintf("Over-provisioned, but 1 %s pod would restart the only pod", smaller.Tier))
			}
			smaller = paired
		}
		next, peak = smaller, tierPeak
	default:
		return hold(d, ReasonWithinTargets, "Within targets")
	}
	d.Replicas, d.Tier = next.Replicas, next.Tier
	d.Action, d.Reason = actionBetween(cur, next), ReasonOverProvisioned
	d.Message = fmt.Sprintf("Peak load over %s with its trend (write %.2f, read %.2f) fits %d %s pods within %.0f%% of target (the cheapest fit is %d %s pods); %d %s pods -> %d %s pods",
		window, peak.Write, peak.Read, next.Replicas, next.Tier, 100*downHeadroom, want.Replicas, want.Tier, cur.Replicas, cur.Tier, next.Replicas, next.Tier)
	return d
}

// decideStorage recommends a bigger volume when the fullest one passes the
// threshold, by one step up to the maximum, if the StorageClass allows it.
// Volumes never shrink.
func decideStorage(d Decision, in Input, volume float64) Decision {
	p := in.Policy
	if p.StorageMaxBytes <= 0 || volume < p.StorageThreshold || in.Current.StorageBytes >= p.StorageMaxBytes {
		return d
	}
	if !p.StorageExpandable {
		if d.Action == ActionHold {
			d.Reason = ReasonStorageFixed
			d.Message = fmt.Sprintf("A volume is %.0f%% full but its StorageClass does not allow expansion", 100*volume)
		}
		return d
	}
	grown := math.Min(p.StorageMaxBytes, math.Ceil(in.Current.StorageBytes*(1+p.StorageStep)/gib)*gib)
	if grown <= in.Current.StorageBytes {
		return d
	}
	d.StorageBytes = grown
	if d.Action == ActionHold {
		d.Action, d.Reason = ActionGrowStorage, ReasonStorageThreshold
		d.Message = fmt.Sprintf("The fullest volume is %.0f%% full (threshold %.0f%%); growing volumes from %.0fGi to %.0fGi",
			100*volume, 100*p.StorageThreshold, in.Current.StorageBytes/gib, grown/gib)
	}
	return d
}

const gib = 1 << 30

// raisedConnections is the current connection limit when the auto-pilot
// raised it above the tier's own, else zero.
func raisedConnections(c Current) int32 {
	size, ok := c.Tier.Size()
	if !ok || c.MaxConnections <= size.MaxConnections {
		return 0
	}
	return c.MaxConnections
}

// raiseConnections returns the next connection limit, half as much again up
// to the tier's limit, and false at the limit.
func raiseConnections(c Current) (int32, bool) {
	size, ok := c.Tier.Size()
	if !ok {
		return 0, false
	}
	current := max(c.MaxConnections, size.MaxConnections)
	raised := min(size.MaxConnectionsLimit, current+current/2)
	return raised, raised > current
}

func hold(d Decision, reason, message string) Decision {
	d.Reason, d.Message = reason, message
	return d
}

// takeBackUnplaceable goes back to what the cluster places when pods it
// cannot place hold a change up, and narrows policy to it: the decision,
// and whether there is one to return.
//   - Pods a scale-up added that the cluster cannot place serve nothing and
//     hold every later change behind a scale-up that never ends, however
//     busy it keeps the Database: back to the pods it places, and a bigger
//     tier rather than more pods until it places more.
//   - So do pods of a tier no node has room for, which a tier change
//     recreates: back to the tier it places, and more pods rather than a
//     bigger tier until it places a bigger one.
func takeBackUnplaceable(d Decision, policy *Policy, cur Size) (Decision, bool) {
	p := *policy
	if c := p.PlaceableReplicas; c > 0 {
		if placed := max(p.MinReplicas, c); cur.Replicas > placed {
			d.Replicas, d.Action, d.Reason = placed, ActionScaleDown, ReasonUnschedulable
			d.Message = fmt.Sprintf("%d of %d pods cannot be scheduled: back to %d pods, and a bigger tier rather than more pods while the cluster places no more",
				cur.Replicas-c, cur.Replicas, placed)
			return d, true
		}
		p.MaxReplicas = max(p.MinReplicas, min(p.MaxReplicas, c))
	}
	if t := p.PlaceableTier; t.Index() >= 0 {
		if placed := dbpilotv1alpha1.TierAt(max(p.MinTier.Index(), t.Index())); cur.Tier.Index() > placed.Index() {
			d.Tier, d.Action, d.Reason = placed, ActionTierDown, ReasonUnschedulable
			d.Message = fmt.Sprintf("The cluster has no room for a %s pod: back to %s, and more pods rather than a bigger tier while it places none",
				cur.Tier, placed)
			return d, true
		}
		p.MaxTier = dbpilotv1alpha1.TierAt(max(p.MinTier.Index(), min(p.MaxTier.Index(), t.Index())))
	}
	*policy = p
	return d, false
}

// actionBetween names the change from a to b: tier first, since it is the
// bigger event.
func actionBetween(a, b Size) Action {
	switch {
	case b.Tier.Index() > a.Tier.Index():
		return ActionTierUp
	case b.Tier.Index() < a.Tier.Index():
		return ActionTierDown
	case b.Replicas > a.Replicas:
		return ActionScaleUp
	case b.Replicas < a.Replicas:
		return ActionScaleDown
	}
	return ActionHold
}

func clampSize(s Size, p Policy) Size {
	return Size{
		Replicas: max(p.MinReplicas, min(s.Replicas, p.MaxReplicas)),
		Tier:     dbpilotv1alpha1.TierAt(max(p.MinTier.Index(), min(s.Tier.Index(), p.MaxTier.Index()))),
	}
}

// settledAt is when the metrics reflect the last change: its rollout's end
// (or, unknown, its decision) plus the settle time. Zero without a change.
func settledAt(in Input) time.Time {
	since := in.Last.Settled
	if since.Before(in.Last.DirectionTime) {
		since = in.Last.DirectionTime
	}
	if since.IsZero() {
		return since
	}
	return since.Add(in.Policy.SettleTime)
}

// project adds to load what its rising trend brings, over writeFor for
// writes and readFor for reads.
func project(load, trend Load, writeFor, readFor time.Duration) Load {
	return Load{
		Write:       load.Write + math.Max(0, trend.Write)*writeFor.Seconds(),
		Read:        load.Read + math.Max(0, trend.Read)*readFor.Seconds(),
		ReplicaOnly: load.ReplicaOnly,
	}
}

// leadAhead is the load when a change started now becomes effective: writes
// call for a tier, which takes TierLeadTime; reads for replicas,
// ReplicaLeadTime.
func leadAhead(load, trend Load) Load {
	return project(load, trend, TierLeadTime, ReplicaLeadTime)
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }
