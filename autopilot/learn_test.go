package autopilot

import (
	"math"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// replaying renders a sample of a database whose replicas replay writes at
// share, with its own arithmetic: a write costs 0.01 units of CPU per
// write/s on the primary and share times that on each replica, a read 0.01
// units per read/s on the pod that serves it; reads spread evenly.
func replaying(at time.Time, replicas int32, tier dbpilotv1alpha1.Tier, writeRate, readRate, share float64) Sample {
	size, _ := tier.Size()
	cores := size.CPU.AsApproximateFloat64()
	perUnit := cores / float64(size.Capacity)
	s := Sample{Time: at, Replicas: replicas, Tier: tier}
	perPodReads := readRate / float64(replicas)
	for i := range replicas {
		units := 0.01*share*writeRate + 0.01*perPodReads
		pod := PodSample{ReadRate: perPodReads, MemoryBytes: 1, MaxConnections: 100}
		if i == 0 {
			units = 0.01*writeRate + 0.01*perPodReads
			pod.Primary, pod.WriteRate = true, writeRate
		}
		pod.CPUCores = units * perUnit
		s.Pods = append(s.Pods, pod)
	}
	return s
}

// history runs each (replicas, writes/s, reads/s) phase for 10 minutes,
// a sample every 15 s.
func phases(share float64, tier dbpilotv1alpha1.Tier, each ...[3]float64) []Sample {
	var out []Sample
	at := now.Add(-time.Duration(len(each)) * 10 * time.Minute)
	for _, p := range each {
		for range 40 {
			out = append(out, replaying(at, int32(p[0]), tier, p[1], p[2], share))
			at = at.Add(15 * time.Second)
		}
	}
	return out
}

func TestLearnModelFindsTheReplayShare(t *testing.T) {
	for _, share := range []float64{0, 0.1, 0.45, 0.8} {
		// The number of pods changes: per-pod reads change, writes do not.
		history := phases(share, dbpilotv1alpha1.TierLarge, [3]float64{2, 100, 200}, [3]float64{3, 100, 200}, [3]float64{4, 100, 200})
		if got := LearnModel(history).ReplayShare; math.Abs(got-share) > 0.01 {
			t.Errorf("pods changing, share %.2f: learnt %.3f", share, got)
		}
		// The mix changes on the same pods.
		history = phases(share, dbpilotv1alpha1.TierLarge, [3]float64{3, 50, 300}, [3]float64{3, 150, 100})
		if got := LearnModel(history).ReplayShare; math.Abs(got-share) > 0.01 {
			t.Errorf("mix changing, share %.2f: learnt %.3f", share, got)
		}
	}
}

func TestLearnModelAssumesWhatItCannotTell(t *testing.T) {
	cases := map[string][]Sample{
		"nothing": nil,
		// Writes and reads in the same proportion on the same pods: their
		// costs cannot be told apart.
		"one mix, one size": phases(0.7, dbpilotv1alpha1.TierLarge, [3]float64{3, 100, 200}, [3]float64{3, 50, 100}),
		"one pod":           phases(0.7, dbpilotv1alpha1.TierLarge, [3]float64{1, 100, 200}, [3]float64{1, 50, 300}),
		"no writes":         phases(0.7, dbpilotv1alpha1.TierLarge, [3]float64{2, 0, 200}, [3]float64{3, 0, 300}),
	}
	// Saturated pods hide their load: a fit on them would be wrong.
	saturated := phases(0.7, dbpilotv1alpha1.TierSmall, [3]float64{2, 100, 200}, [3]float64{3, 100, 200})
	cases["saturated"] = saturated
	for name, history := range cases {
		if got := LearnModel(history); got != Assumed {
			t.Errorf("%s: learnt %+v, want %+v", name, got, Assumed)
		}
	}
}

// TestLearnModelSkipsSamplesRightAfterAChange: samples taken while the rate
// window still spans the previous size do not count.
func TestLearnModelSkipsSamplesRightAfterAChange(t *testing.T) {
	history := phases(0.6, dbpilotv1alpha1.TierLarge, [3]float64{2, 100, 200}, [3]float64{3, 100, 200})
	// The first minute at three pods still shows two pods' CPU.
	for i := 40; i < 44; i++ {
		stale := replaying(history[i].Time, 2, dbpilotv1alpha1.TierLarge, 100, 200, 0.6)
		for j := range history[i].Pods[:2] {
			history[i].Pods[j].CPUCores = stale.Pods[j].CPUCores
		}
		history[i].Pods[2].CPUCores = stale.Pods[1].CPUCores
	}
	if got := LearnModel(history).ReplayShare; math.Abs(got-0.6) > 1e-6 {
		t.Errorf("learnt %.9f, want 0.6 exactly", got)
	}
}

// TestDecideUsesTheLearntShare: the share shows in the decision's signals,
// and a write load that replicas replaying at 0.3 could carry calls for a
// bigger tier when they replay at 0.8.
func TestDecideUsesTheLearntShare(t *testing.T) {
	decide := func(share float64) Decision {
		history := phases(share, dbpilotv1alpha1.TierMedium, [3]float64{2, 60, 40}, [3]float64{3, 60, 40}, [3]float64{3, 100, 40})
		return Decide(Input{Now: now, Policy: policy(), Current: Current{Replicas: 3, Tier: dbpilotv1alpha1.TierMedium, StorageBytes: 10 * gib}, History: history})
	}
	light, heavy := decide(0.1), decide(0.8)
	if light.Signals["replayShare"] != 0.1 || heavy.Signals["replayShare"] != 0.8 {
		t.Fatalf("replay shares in the signals: %v and %v", light.Signals["replayShare"], heavy.Signals["replayShare"])
	}
	if light.Signals["replicaUtilization"] >= heavy.Signals["replicaUtilization"] {
		t.Errorf("replica utilization %.2f at share 0.1, %.2f at 0.8", light.Signals["replicaUtilization"], heavy.Signals["replicaUtilization"])
	}
}

// TestLearnModelSkipsSamplesWhoseRateWindowSawSaturation: CPU is averaged
// over a rate window, so the samples after a saturated one still show
// capped CPU: here every pod at the same capped level, which a fit would
// read as replicas replaying writes at the primary's full cost.
func TestLearnModelSkipsSamplesWhoseRateWindowSawSaturation(t *testing.T) {
	var history []Sample
	at := now.Add(-time.Hour)
	for i := range 240 {
		readRate := 50 + float64(i%7)*10
		s := replaying(at, 2, dbpilotv1alpha1.TierMedium, 40, readRate, 0.3)
		for j := range s.Pods {
			// Capped: the same on every pod, following the reads.
			s.Pods[j].CPUCores = 0.4 + 0.004*readRate
			if i%8 == 0 {
				s.Pods[j].CPUCores = 1 // a medium pod has 1 core
			}
		}
		history = append(history, s)
		at = at.Add(15 * time.Second)
	}
	if got := LearnModel(history); got != Assumed {
		t.Errorf("learnt %+v from capped samples, want %+v", got, Assumed)
	}
}

func TestLearnModelClampsTheShare(t *testing.T) {
	history := phases(0.95, dbpilotv1alpha1.TierLarge, [3]float64{2, 100, 200}, [3]float64{3, 100, 200}, [3]float64{4, 100, 200})
	if got := LearnModel(history).ReplayShare; got != MaxReplayShare {
		t.Errorf("learnt %.3f, want it clamped to %.2f", got, MaxReplayShare)
	}
}

// TestEstimateLoadStaysFiniteForAnyShare: replicas as busy as the primary
// leave nothing to divide by at a share of 1.
func TestEstimateLoadStaysFiniteForAnyShare(t *testing.T) {
	s := replaying(now, 2, dbpilotv1alpha1.TierMedium, 40, 100, 1)
	for _, share := range []float64{1, 2, math.Inf(1)} {
		load := Model{ReplayShare: share}.EstimateLoad(s)
		for name, v := range map[string]float64{"write": load.Write, "read": load.Read} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("share %v: %s load %v", share, name, v)
			}
		}
	}
}
