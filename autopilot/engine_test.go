package autopilot

import (
	"math"
	"strings"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func policy() Policy {
	return Policy{
		MinReplicas: 1, MaxReplicas: 8, MinTier: dbpilotv1alpha1.TierSmall, MaxTier: dbpilotv1alpha1.Tier2XLarge,
		CPUTarget: 0.7, MemoryTarget: 0.8, ConnectionTarget: 0.8,
		ScaleUpStabilization: time.Minute, ScaleDownStabilization: 10 * time.Minute, TierCooldown: 15 * time.Minute,
		SettleTime:       90 * time.Second,
		StorageThreshold: 0.8, StorageStep: 0.25,
	}
}

// sample renders what the metrics show for load on a size: CPU in cores from
// the model, memory at half the tier, a volume at volumeUse.
func sample(at time.Time, s Size, load Load, volumeUse float64) Sample {
	u := Assumed.Predict(load, s.Replicas, s.Tier)
	size, _ := s.Tier.Size()
	cores := size.CPU.AsApproximateFloat64()
	out := Sample{Time: at, Replicas: s.Replicas, Tier: s.Tier}
	for i := range s.Replicas {
		util := u.Replica
		if i == 0 {
			util = u.Primary
		}
		// 100 reads per second per capacity unit: the even share on
		// every pod, the replicas-only share on the replicas.
		reads := 100 * load.Read * (1 - load.ReplicaOnly) / float64(s.Replicas)
		switch {
		case s.Replicas == 1:
			reads = 100 * load.Read
		case i > 0:
			reads += 100 * load.Read * load.ReplicaOnly / float64(s.Replicas-1)
		}
		pod := PodSample{
			Primary: i == 0, CPUCores: math.Min(1, util) * cores, MemoryBytes: size.Memory.AsApproximateFloat64() / 2,
			Connections: 10, MaxConnections: float64(size.MaxConnections),
			ReadRate: reads, VolumeUsedBytes: volumeUse * 10 * gib, VolumeCapacityBytes: 10 * gib,
		}
		if i == 0 {
			pod.WriteRate = 100 * load.Write
		}
		out.Pods = append(out.Pods, pod)
	}
	return out
}

// steady is a sample every 15 s for the duration before now.
func steady(s Size, load Load, duration time.Duration) []Sample {
	var history []Sample
	for at := now.Add(-duration); !at.After(now); at = at.Add(15 * time.Second) {
		history = append(history, sample(at, s, load, 0.5))
	}
	return history
}

func input(s Size, history []Sample) Input {
	return Input{Now: now, Policy: policy(), Current: Current{Replicas: s.Replicas, Tier: s.Tier, StorageBytes: 10 * gib}, History: history}
}

var (
	twoMedium = Size{Replicas: 2, Tier: dbpilotv1alpha1.TierMedium}
	oneLarge  = Size{Replicas: 1, Tier: dbpilotv1alpha1.TierLarge}
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name      string
		in        Input
		action    Action
		reason    string
		replicas  int32
		tier      dbpilotv1alpha1.Tier
		metricsOK bool
	}{
		{
			name: "no metrics holds", in: input(twoMedium, nil),
			action: ActionHold, reason: ReasonMetricsMissing, replicas: 2, tier: dbpilotv1alpha1.TierMedium,
		},
		{
			name: "stale metrics hold", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 3, Read: 3}, 5*time.Minute))
				in.Now = now.Add(3 * time.Minute)
				return in
			}(),
			action: ActionHold, reason: ReasonMetricsStale, replicas: 2, tier: dbpilotv1alpha1.TierMedium,
		},
		{
			name: "partial metrics hold even under pressure", in: func() Input {
				h := steady(twoMedium, Load{Write: 3, Read: 3}, 5*time.Minute)
				h[len(h)-1].Pods = h[len(h)-1].Pods[:1]
				return input(twoMedium, h)
			}(),
			action: ActionHold, reason: ReasonMetricsIncomplete, replicas: 2, tier: dbpilotv1alpha1.TierMedium,
		},
		{
			name: "busy holds", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 3, Read: 1}, 5*time.Minute))
				in.Current.Busy = "backup"
				return in
			}(),
			action: ActionHold, reason: ReasonBusy, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			// Hibernating, with no metrics since and bounds moved:
			// nothing to measure and nothing to change.
			name: "a stopped Database holds", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 3, Read: 3}, 5*time.Minute))
				in.Now = in.Now.Add(time.Hour)
				in.Policy.MinReplicas = 3
				in.Current.Stopped = true
				return in
			}(),
			action: ActionHold, reason: ReasonStopped, replicas: 2, tier: dbpilotv1alpha1.TierMedium,
		},
		{
			// The bigger primary carries it alone; the replica it no
			// longer needs goes once the tier has rolled out.
			name: "write pressure on the primary takes a bigger tier", in: input(twoMedium, steady(twoMedium, Load{Write: 1.8, Read: 0.4}, 5*time.Minute)),
			action: ActionTierUp, reason: ReasonWritePressure, replicas: 1, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "a tier step sheds at most half the replicas", in: func() Input {
				four := Size{Replicas: 4, Tier: dbpilotv1alpha1.TierMedium}
				// One large pod would carry it; the step keeps half of the four.
				return input(four, steady(four, Load{Write: 1.88, Read: 0.2}, 5*time.Minute))
			}(),
			action: ActionTierUp, reason: ReasonWritePressure, replicas: 2, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "read pressure during a tier cooldown still adds replicas", in: func() Input {
				four := Size{Replicas: 4, Tier: dbpilotv1alpha1.TierLarge}
				in := input(four, steady(four, Load{Write: 0.4, Read: 14}, 10*time.Minute))
				in.Last = LastChanges{Tier: now.Add(-8 * time.Minute), Direction: 1, DirectionTime: now.Add(-8 * time.Minute), Settled: now.Add(-6 * time.Minute)}
				return in
			}(),
			action: ActionScaleUp, reason: ReasonReadPressure, replicas: 6, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "read pressure over replicas adds replicas", in: input(twoMedium, steady(twoMedium, Load{Write: 0.2, Read: 3.2}, 5*time.Minute)),
			action: ActionScaleUp, reason: ReasonReadPressure, replicas: 3, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			// A third pod the cluster cannot place: back to two at once,
			// however busy the Database looks (its scale-up never ends).
			name: "pods the cluster cannot place are taken back", in: func() Input {
				three := Size{Replicas: 3, Tier: dbpilotv1alpha1.TierMedium}
				in := input(three, steady(twoMedium, Load{Write: 0.2, Read: 3.2}, 5*time.Minute))
				in.Policy.PlaceableReplicas = 2
				in.Current.Busy = "the rollout in progress"
				return in
			}(),
			action: ActionScaleDown, reason: ReasonUnschedulable, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			// The same read pressure that would add a third pod takes a
			// bigger tier while the cluster places two.
			name: "read pressure grows the tier while the cluster places no more pods", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 0.2, Read: 3.2}, 5*time.Minute))
				in.Policy.PlaceableReplicas = 2
				return in
			}(),
			action: ActionTierUp, reason: ReasonReadPressure, replicas: 2, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			// A large pod no node has room for: back to medium at once,
			// however busy the Database looks (its roll never ends).
			name: "a tier the cluster cannot place is taken back", in: func() Input {
				oneLarge := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierLarge}
				in := input(oneLarge, steady(twoMedium, Load{Write: 1.8, Read: 0.4}, 5*time.Minute))
				in.Policy.PlaceableTier = dbpilotv1alpha1.TierMedium
				in.Current.Busy = "the rollout in progress"
				return in
			}(),
			action: ActionTierDown, reason: ReasonUnschedulable, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			// A lone pod recreated at a tier no node has room for
			// reports no metrics: taken back all the same.
			name: "a lone pod waiting for a node is taken back without metrics", in: func() Input {
				oneLarge := Size{Replicas: 1, Tier: dbpilotv1alpha1.TierLarge}
				h := steady(Size{Replicas: 1, Tier: dbpilotv1alpha1.TierMedium}, Load{Write: 0.9, Read: 0.1}, 5*time.Minute)
				h[len(h)-1].Replicas, h[len(h)-1].Pods = 0, nil
				in := input(oneLarge, h)
				in.Policy.PlaceableTier = dbpilotv1alpha1.TierMedium
				in.Current.Busy = "the rollout in progress"
				return in
			}(),
			action: ActionTierDown, reason: ReasonUnschedulable, replicas: 1, tier: dbpilotv1alpha1.TierMedium,
		},
		{
			// The write pressure that would take the large tier adds
			// pods instead, which take the reads off the primary.
			name: "no bigger tier than the cluster places", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 1.8, Read: 0.4}, 5*time.Minute))
				in.Policy.PlaceableTier = dbpilotv1alpha1.TierMedium
				return in
			}(),
			action: ActionScaleUp, reason: ReasonWritePressure, replicas: 4, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			name: "the owner's minimum tier stays whatever the cluster places", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 0.2, Read: 1}, 5*time.Minute))
				in.Policy.MinTier, in.Policy.PlaceableTier = dbpilotv1alpha1.TierMedium, dbpilotv1alpha1.TierSmall
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			// The owner's minimum wins over what the cluster places.
			name: "the owner's minimum stays however few pods the cluster places", in: func() Input {
				in := input(twoMedium, steady(twoMedium, Load{Write: 0.2, Read: 1}, 5*time.Minute))
				in.Policy.MinReplicas, in.Policy.PlaceableReplicas = 2, 1
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			name: "a breach shorter than the stabilization window waits", in: func() Input {
				h := steady(twoMedium, Load{Write: 0.2, Read: 1}, 10*time.Minute)
				h[len(h)-1] = sample(now, twoMedium, Load{Write: 2, Read: 2}, 0.5)
				return input(twoMedium, h)
			}(),
			action: ActionHold, reason: ReasonStabilizing, replicas: 2, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			name: "low load for the whole window scales replicas down first", in: func() Input {
				in := input(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, steady(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, Load{Write: 0.3, Read: 0.6}, 30*time.Minute))
				in.Last = LastChanges{Direction: -1, DirectionTime: now.Add(-time.Hour), Settled: now.Add(-time.Hour)}
				return in
			}(),
			action: ActionScaleDown, reason: ReasonOverProvisioned, replicas: 2, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "no scale-down without a full window of data", in: func() Input {
				in := input(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, steady(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, Load{Write: 0.3, Read: 0.6}, 5*time.Minute))
				in.Last = LastChanges{Direction: -1, DirectionTime: now.Add(-time.Hour), Settled: now.Add(-time.Hour)}
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 3, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "no scale-down across a gap in the metrics", in: func() Input {
				h := steady(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, Load{Write: 0.3, Read: 0.6}, 30*time.Minute)
				h = append(h[:100], h[110:]...)
				in := input(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, h)
				in.Last = LastChanges{Direction: -1, DirectionTime: now.Add(-time.Hour), Settled: now.Add(-time.Hour)}
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 3, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "no scale-down within ten minutes of a scale-up", in: func() Input {
				in := input(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, steady(Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, Load{Write: 0.3, Read: 0.6}, 30*time.Minute))
				in.Last = LastChanges{Direction: 1, DirectionTime: now.Add(-5 * time.Minute), Settled: now.Add(-3 * time.Minute)}
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 3, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "a tier change waits for the cooldown", in: func() Input {
				in := input(Size{Replicas: 1, Tier: dbpilotv1alpha1.TierMedium}, steady(Size{Replicas: 1, Tier: dbpilotv1alpha1.TierMedium}, Load{Write: 1.8, Read: 0.1}, 10*time.Minute))
				in.Last = LastChanges{Tier: now.Add(-8 * time.Minute), Direction: 1, DirectionTime: now.Add(-8 * time.Minute), Settled: now.Add(-6 * time.Minute)}
				return in
			}(),
			action: ActionHold, reason: ReasonCooldown, replicas: 1, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			name: "a steady load one tier down with more replicas rebalances", in: func() Input {
				twoLarge := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierLarge}
				in := input(twoLarge, steady(twoLarge, Load{Write: 0.66, Read: 2.6}, 40*time.Minute))
				in.Last = LastChanges{Direction: 1, DirectionTime: now.Add(-30 * time.Minute), Tier: now.Add(-30 * time.Minute)}
				return in
			}(),
			action: ActionTierDown, reason: ReasonOverProvisioned, replicas: 3, tier: dbpilotv1alpha1.TierMedium, metricsOK: true,
		},
		{
			name: "a load that just fell waits for replicas to go instead of rebalancing", in: func() Input {
				twoLarge := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierLarge}
				h := steady(twoLarge, Load{Write: 0.66, Read: 2.6}, 40*time.Minute)
				for i := len(h) - 8; i < len(h); i++ {
					h[i] = sample(h[i].Time, twoLarge, Load{Write: 0.5, Read: 1}, 0.5)
				}
				in := input(twoLarge, h)
				in.Last = LastChanges{Direction: 1, DirectionTime: now.Add(-30 * time.Minute), Tier: now.Add(-30 * time.Minute)}
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 2, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "a tier-down must hold the trend over the tier cooldown", in: func() Input {
				var h []Sample
				// Fits one medium pod for the next 10 minutes, not 15.
				for i := range 41 {
					at := now.Add(time.Duration(i-40) * 15 * time.Second)
					h = append(h, sample(at, oneLarge, Load{Write: 0.2, Read: 0.17 + 0.012*float64(i)}, 0.5))
				}
				in := input(oneLarge, h)
				in.Last = LastChanges{Direction: -1, DirectionTime: now.Add(-30 * time.Minute), Tier: now.Add(-30 * time.Minute)}
				return in
			}(),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 1, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "at the most the bounds allow it holds", in: func() Input {
				big := Size{Replicas: 8, Tier: dbpilotv1alpha1.Tier2XLarge}
				return input(big, steady(big, Load{Write: 30, Read: 80}, 5*time.Minute))
			}(),
			action: ActionHold, reason: ReasonAtBounds, replicas: 8, tier: dbpilotv1alpha1.Tier2XLarge, metricsOK: true,
		},
		{
			name: "outside new bounds it comes back inside", in: func() Input {
				in := input(Size{Replicas: 6, Tier: dbpilotv1alpha1.TierXLarge}, nil)
				in.Policy.MaxReplicas, in.Policy.MaxTier = 4, dbpilotv1alpha1.TierLarge
				return in
			}(),
			action: ActionTierDown, reason: ReasonAtBounds, replicas: 4, tier: dbpilotv1alpha1.TierLarge,
		},
		{
			name: "a steady load within target holds", in: input(oneLarge, steady(oneLarge, Load{Write: 1, Read: 1}, 30*time.Minute)),
			action: ActionHold, reason: ReasonWithinTargets, replicas: 1, tier: dbpilotv1alpha1.TierLarge, metricsOK: true,
		},
		{
			name: "a sustained rise is met before saturation", in: func() Input {
				var h []Sample
				for i := range 25 {
					at := now.Add(time.Duration(i-24) * 15 * time.Second)
					h = append(h, sample(at, oneLarge, Load{Write: 0.4 + 0.09*float64(i), Read: 0.5}, 0.5))
				}
				return input(oneLarge, h)
			}(),
			// A replica of the new tier comes with it, for the lone
			// primary to switch over to. (A replica of this tier would
			// not relieve a primary busy with writes.)
			action: ActionTierUp, reason: ReasonPredicted, replicas: 2, tier: dbpilotv1alpha1.TierXLarge, metricsOK: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Action != tc.action || d.Reason != tc.reason || d.Replicas != tc.replicas || d.Tier != tc.tier {
				t.Errorf("got %s/%s to %d %s, want %s/%s to %d %s\n%s", d.Action, d.Reason, d.Replicas, d.Tier, tc.action, tc.reason, tc.replicas, tc.tier, d.Message)
			}
			if d.MetricsReady != tc.metricsOK {
				t.Errorf("MetricsReady = %v, want %v", d.MetricsReady, tc.metricsOK)
			}
		})
	}
}

func TestDecideGrowsStorageOnlyWhenExpandable(t *testing.T) {
	history := steady(oneLarge, Load{Write: 1, Read: 1}, 5*time.Minute)
	history[len(history)-1] = sample(now, oneLarge, Load{Write: 1, Read: 1}, 0.85)

	in := input(oneLarge, history)
	in.Policy.StorageMaxBytes, in.Policy.StorageExpandable = 100*gib, true
	d := Decide(in)
	if d.Action != ActionGrowStorage || d.StorageBytes != 13*gib {
		t.Errorf("got %s to %.0f GiB, want GrowStorage to 13 GiB: %s", d.Action, d.StorageBytes/gib, d.Message)
	}

	in.Policy.StorageMaxBytes = 12 * gib
	if d := Decide(in); d.StorageBytes != 12*gib {
		t.Errorf("grew to %.0f GiB past the 12 GiB maximum", d.StorageBytes/gib)
	}

	in.Policy.StorageMaxBytes, in.Policy.StorageExpandable = 100*gib, false
	d = Decide(in)
	if d.StorageBytes != 10*gib || d.Reason != ReasonStorageFixed {
		t.Errorf("grew a volume whose class forbids it: %s %.0f GiB", d.Reason, d.StorageBytes/gib)
	}
}

func TestDecideReportsAnomaliesWithoutActing(t *testing.T) {
	history := steady(oneLarge, Load{Write: 0.5, Read: 0.5}, 20*time.Minute)
	last := &history[len(history)-1]
	for i := range last.Pods {
		last.Pods[i].ReadRate *= 20
	}
	d := Decide(input(oneLarge, history))
	if len(d.Anomalies) == 0 || !strings.Contains(d.Anomalies[0], "throughput") {
		t.Errorf("no throughput anomaly reported: %v", d.Anomalies)
	}
	if d.Action != ActionHold {
		t.Errorf("an anomaly alone changed the size: %s", d.Action)
	}
}

func TestUnmaskedScalesWhatSaturatedPodsHide(t *testing.T) {
	threeLarge := Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}
	load := Load{Write: 1, Read: 2}
	cases := []struct {
		name        string
		sample      Sample
		write, read float64
	}{
		{"nothing saturated", sample(now, threeLarge, Load{Write: 0.5, Read: 1}, 0.5), 1, 2},
		{"a saturated primary hides writes", sample(now, threeLarge, Load{Write: 3.8, Read: 1}, 0.5), saturationHidden, 2},
		{"saturated replicas hide reads too", sample(now, threeLarge, Load{Write: 3.5, Read: 12}, 0.5), saturationHidden, 2 * saturationHidden},
		{"a lone saturated primary hides both", sample(now, oneLarge, Load{Write: 3, Read: 3}, 0.5), saturationHidden, 2 * saturationHidden},
	}
	for _, tc := range cases {
		got := Unmasked(load, tc.sample)
		if math.Abs(got.Write-tc.write) > 1e-9 || math.Abs(got.Read-tc.read) > 1e-9 {
			t.Errorf("%s: got %+v, want write %.3f read %.3f", tc.name, got, tc.write, tc.read)
		}
	}
}

func TestEstimateLoadSeparatesWritesFromReads(t *testing.T) {
	for _, load := range []Load{{Write: 1, Read: 0.5}, {Write: 0.2, Read: 2}, {Write: 0, Read: 1},
		// Reads on the -ro Service, all or some.
		{Write: 0.1, Read: 2, ReplicaOnly: 1}, {Write: 0.5, Read: 1.5, ReplicaOnly: 0.6}, {Write: 0, Read: 1, ReplicaOnly: 1}} {
		got := Assumed.EstimateLoad(sample(now, Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}, load, 0.5))
		if math.Abs(got.Write-load.Write) > 1e-6 || math.Abs(got.Read-load.Read) > 1e-6 || math.Abs(got.ReplicaOnly-load.ReplicaOnly) > 1e-6 {
			t.Errorf("estimated %+v from %+v", got, load)
		}
	}
	// Reads only on replicas: a replica carries them all when it is the
	// only one, half each when there are two.
	if u := Assumed.Predict(Load{Read: 1.2, ReplicaOnly: 1}, 2, dbpilotv1alpha1.TierSmall); math.Abs(u.Replica-1.2) > 1e-9 || u.Primary != 0 {
		t.Errorf("1.2 units on -ro over one replica: %+v", u)
	}
	if u := Assumed.Predict(Load{Read: 1.2, ReplicaOnly: 1}, 3, dbpilotv1alpha1.TierSmall); math.Abs(u.Replica-0.6) > 1e-9 {
		t.Errorf("1.2 units on -ro over two replicas: %+v", u)
	}
	// One pod: the split follows the engine's read and write rates.
	got := Assumed.EstimateLoad(sample(now, oneLarge, Load{Write: 1, Read: 1}, 0.5))
	if math.Abs(got.Write-1) > 1e-6 || math.Abs(got.Read-1) > 1e-6 {
		t.Errorf("single pod estimated %+v, want 1/1", got)
	}
}

func TestDecideRaisesConnectionsWithinTheTierLimit(t *testing.T) {
	small := Size{Replicas: 1, Tier: dbpilotv1alpha1.TierSmall}
	history := steady(small, Load{Write: 0.1, Read: 0.1}, 5*time.Minute)
	for i := range history {
		history[i].Pods[0].Connections = 95
	}
	in := input(small, history)
	in.Current.MaxConnections = 100
	d := Decide(in)
	if d.Action != ActionRaiseConnections || d.MaxConnections != 150 || d.Tier != dbpilotv1alpha1.TierSmall {
		t.Fatalf("got %s to %d connections on %s, want RaiseConnections to 150 on small: %s", d.Action, d.MaxConnections, d.Tier, d.Message)
	}

	// At the tier's limit (twice its 100), only a bigger tier helps.
	for i := range history {
		history[i].Pods[0].MaxConnections = 200
		history[i].Pods[0].Connections = 190
	}
	in.Current.MaxConnections = 200
	d = Decide(in)
	if d.Action != ActionTierUp || d.MaxConnections != 0 {
		t.Errorf("at the limit got %s with %d connections, want TierUp resetting to the tier's own", d.Action, d.MaxConnections)
	}

	// Memory is short: no raise, a bigger tier.
	for i := range history {
		history[i].Pods[0].MaxConnections = 100
		history[i].Pods[0].Connections = 95
		history[i].Pods[0].MemoryBytes = 0.75 * (1 << 30)
	}
	in.Current.MaxConnections = 100
	if d := Decide(in); d.Action != ActionTierUp {
		t.Errorf("with memory at 75%% got %s, want TierUp", d.Action)
	}
}

// TestScaleDownWaitsForTheTrendAfterARollout: right after a tier change has
// rolled out, the trend window is mostly the skipped rollout, so a rising
// load is not yet visible; a scale-down must wait rather than take the trend
// as flat.
func TestScaleDownWaitsForTheTrendAfterARollout(t *testing.T) {
	threeLarge := Size{Replicas: 3, Tier: dbpilotv1alpha1.TierLarge}
	threeMedium := Size{Replicas: 3, Tier: dbpilotv1alpha1.TierMedium}
	changed := now.Add(-285 * time.Second)
	var h []Sample
	for at := now.Add(-40 * time.Minute); !at.After(now); at = at.Add(15 * time.Second) {
		size := threeLarge
		if !at.Before(changed) {
			size = threeMedium
		}
		read := 2.2 - 0.8*now.Sub(at).Seconds()/900
		h = append(h, sample(at, size, Load{Write: 0.2, Read: read}, 0.5))
	}
	in := input(threeMedium, h)
	in.Last = LastChanges{Direction: -1, DirectionTime: changed, Tier: changed, Settled: now.Add(-105 * time.Second)}
	d := Decide(in)
	if d.Action != ActionHold || !strings.Contains(d.Message, "trend") {
		t.Fatalf("got %s to %d %s (%s), want a hold until the trend is known", d.Action, d.Replicas, d.Tier, d.Message)
	}
	// Ten minutes later the trend is known, and it is rising: still no
	// scale-down into it.
	in.Now = now.Add(10 * time.Minute)
	for at := now.Add(15 * time.Second); !at.After(in.Now); at = at.Add(15 * time.Second) {
		read := 2.2 + 0.8*at.Sub(now).Seconds()/900
		in.History = append(in.History, sample(at, threeMedium, Load{Write: 0.2, Read: read}, 0.5))
	}
	if d := Decide(in); d.Action == ActionScaleDown || d.Action == ActionTierDown {
		t.Errorf("scaled down into a rising load: %s", d.Message)
	}
}

// TestReadsOnReplicasKeepTheirReplicas: reads sent to the -ro Service run
// on the replicas alone. A Database of three pods whose two replicas carry
// them at 50 % while the primary idles must keep both replicas: one replica
// would carry 100 % (taken as spread over every pod, they would fit two
// pods at 75 %, and the Database would flap between two and three).
func TestReadsOnReplicasKeepTheirReplicas(t *testing.T) {
	three := Size{Replicas: 3, Tier: dbpilotv1alpha1.TierSmall}
	onReplicas := Load{Write: 0.02, Read: 1, ReplicaOnly: 1}
	in := input(three, steady(three, onReplicas, time.Hour))
	in.Policy.CPUTarget = 0.8
	if d := Decide(in); d.Replicas != 3 || d.Action != ActionHold {
		t.Errorf("reads on replicas: %s to %d pods (%s: %s), want to hold 3", d.Action, d.Replicas, d.Reason, d.Message)
	}
	spread := Load{Write: 0.02, Read: 1.2}
	in = input(three, steady(three, spread, time.Hour))
	in.Policy.CPUTarget = 0.8
	if d := Decide(in); d.Replicas != 2 {
		t.Errorf("reads on every pod: %s to %d pods, want 2", d.Action, d.Replicas)
	}
	// Two pods, the replica saturated by -ro reads, the primary idle: a
	// third pod, for reads.
	two := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierSmall}
	in = input(two, steady(two, Load{Write: 0.02, Read: 1.3, ReplicaOnly: 1}, 10*time.Minute))
	in.Policy.CPUTarget, in.Policy.MaxTier = 0.8, dbpilotv1alpha1.TierSmall
	if d := Decide(in); d.Replicas != 3 || d.Reason != ReasonReadPressure {
		t.Errorf("a saturated replica: %s to %d pods (%s), want 3 for reads", d.Action, d.Replicas, d.Reason)
	}
}

// TestLonePodIsNeverRestartedForATier: a tier change of a one-pod Database
// would restart its only pod, leaving it without writes; the engine pairs it
// with a replica of the new tier (at no more cost going down), unless the
// cluster resizes pods in place or the bounds allow one pod only.
func TestLonePodIsNeverRestartedForATier(t *testing.T) {
	oneLarge := Size{Replicas: 1, Tier: dbpilotv1alpha1.TierLarge}
	var rising []Sample
	for i := range 25 {
		rising = append(rising, sample(now.Add(time.Duration(i-24)*15*time.Second), oneLarge, Load{Write: 0.4 + 0.09*float64(i), Read: 0.5}, 0.5))
	}
	up := input(oneLarge, rising)
	if d := Decide(up); d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierXLarge || !strings.Contains(d.Message, "switch over") {
		t.Errorf("up: got %d %s (%s), want 2 xlarge", d.Replicas, d.Tier, d.Message)
	}
	up.Current.ShrinksInPlace = true
	if d := Decide(up); d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierXLarge {
		t.Errorf("up, shrunk in place but not grown: got %d %s, want 2 xlarge", d.Replicas, d.Tier)
	}
	up.Current.GrowsInPlace = true
	if d := Decide(up); d.Replicas != 1 || d.Tier != dbpilotv1alpha1.TierXLarge {
		t.Errorf("up, resized in place: got %d %s, want 1 xlarge", d.Replicas, d.Tier)
	}

	quiet := input(oneLarge, steady(oneLarge, Load{Write: 0.3, Read: 0.3}, 30*time.Minute))
	if d := Decide(quiet); d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierMedium {
		t.Errorf("down: got %s to %d %s (%s), want 2 medium pods, as costly as 1 large", d.Action, d.Replicas, d.Tier, d.Message)
	}
	// PostgreSQL grows in place but rolls to a smaller tier.
	quiet.Current.GrowsInPlace = true
	if d := Decide(quiet); d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierMedium {
		t.Errorf("down, grown in place but not shrunk: got %s to %d %s, want 2 medium pods", d.Action, d.Replicas, d.Tier)
	}
	quiet.Current.ShrinksInPlace = true
	if d := Decide(quiet); d.Replicas != 1 || d.Tier != dbpilotv1alpha1.TierMedium {
		t.Errorf("down, resized in place: got %d %s, want 1 medium", d.Replicas, d.Tier)
	}
	quiet.Current.ShrinksInPlace = false
	quiet.Policy.MaxReplicas = 1
	if d := Decide(quiet); d.Action != ActionHold || d.Tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("down with one pod allowed: got %s to %d %s, want a hold", d.Action, d.Replicas, d.Tier)
	}
}

// TestLonePodTakesTheCheaperStep: a lone pod's tier step brings a replica
// of the new tier, so it costs two bigger pods; a replica of its own tier
// that serves the load is half that. Saturated, the pod hides how much more
// it is asked for, and the bigger step stays.
func TestLonePodTakesTheCheaperStep(t *testing.T) {
	oneMedium := Size{Replicas: 1, Tier: dbpilotv1alpha1.TierMedium}
	busy := input(oneMedium, steady(oneMedium, Load{Write: 0.8, Read: 0.9}, 5*time.Minute))
	if d := Decide(busy); d.Action != ActionScaleUp || d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierMedium {
		t.Errorf("at 85%%: got %s to %d %s (%s), want 2 medium pods", d.Action, d.Replicas, d.Tier, d.Message)
	}
	saturated := input(oneMedium, steady(oneMedium, Load{Write: 0.1, Read: 2.5}, 5*time.Minute))
	if d := Decide(saturated); d.Action != ActionTierUp || d.Replicas != 2 || d.Tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("saturated: got %s to %d %s (%s), want 2 large pods", d.Action, d.Replicas, d.Tier, d.Message)
	}
}

// TestSamplesMixedByARollDoNotHoldAScaleDown: a roll to a new tier leaves
// samples that mix both sizes until it has settled (here they read as far
// more load). They must not count in the peak a scale-down has to hold, or
// the two medium pods a lone large one became keep their replica for a whole
// window after the load has been steady and small. Samples taken while
// added replicas settled do count: they may hold the load that called for
// them.
func TestSamplesMixedByARollDoNotHoldAScaleDown(t *testing.T) {
	changed := now.Add(-8 * time.Minute)
	settled := now.Add(-6 * time.Minute)
	mixedUntil := settled.Add(policy().SettleTime)
	quiet := Load{Write: 0.3, Read: 1.0}
	var h []Sample
	for at := now.Add(-30 * time.Minute); !at.After(now); at = at.Add(15 * time.Second) {
		switch {
		case at.Before(changed):
			h = append(h, sample(at, oneLarge, quiet, 0.5))
		case at.Before(mixedUntil):
			h = append(h, sample(at, twoMedium, Load{Write: 0.9, Read: 1.6}, 0.5))
		default:
			h = append(h, sample(at, twoMedium, quiet, 0.5))
		}
	}
	in := input(twoMedium, h)
	in.Last = LastChanges{Direction: -1, DirectionTime: changed, Tier: changed, Settled: settled}
	if d := Decide(in); d.Action != ActionScaleDown || d.Replicas != 1 || d.Tier != dbpilotv1alpha1.TierMedium {
		t.Errorf("after a roll: got %s to %d %s (%s), want a scale-down to 1 medium pod", d.Action, d.Replicas, d.Tier, d.Message)
	}
	in.Last.Tier = time.Time{}
	if d := Decide(in); d.Action != ActionHold {
		t.Errorf("after replicas changed: got %s to %d %s (%s), want a hold: the load in the window does not fit 1 medium pod", d.Action, d.Replicas, d.Tier, d.Message)
	}
}

func TestDirectionOf(t *testing.T) {
	twoLarge := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierLarge}
	fourMedium := Size{Replicas: 4, Tier: dbpilotv1alpha1.TierMedium}
	for _, tc := range []struct {
		name          string
		before, after Size
		want          int
	}{
		{"more replicas", twoMedium, Size{Replicas: 3, Tier: dbpilotv1alpha1.TierMedium}, 1},
		{"fewer replicas", fourMedium, twoMedium, -1},
		{"a lone pod's tier down, paired with a replica at the same cost", oneLarge, twoMedium, -1},
		{"a tier up shedding replicas at the same cost", fourMedium, twoLarge, 1},
		{"a tier down with more replicas, for less", twoLarge, Size{Replicas: 3, Tier: dbpilotv1alpha1.TierMedium}, -1},
	} {
		if got := DirectionOf(tc.before, tc.after); got != tc.want {
			t.Errorf("%s (%v -> %v): direction %d, want %d", tc.name, tc.before, tc.after, got, tc.want)
		}
	}
}
