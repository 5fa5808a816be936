package autopilot

import (
	"math"
	"reflect"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// FuzzDecide feeds the engine arbitrary loads, sizes, bounds and metrics
// (including NaN, infinities, negative numbers and missing pods; a mix of
// reads and writes that changes, so the replay share is learnt; replicas'
// CPU at any share of the primary's, as busy as it included) and checks
// that every decision lies within the bounds, moves one step at most, has no
// NaN or negative number, never shrinks storage, and is the same for the same
// input.
func FuzzDecide(f *testing.F) {
	f.Add(int8(2), int8(1), int8(1), int8(8), int8(0), int8(4), 1.0, 2.0, 0.5, 0.9, int16(40), uint8(0), 0.0)
	f.Add(int8(1), int8(0), int8(1), int8(1), int8(0), int8(0), 100.0, 0.0, 0.99, 0.1, int16(2), uint8(3), 0.0)
	f.Add(int8(9), int8(4), int8(2), int8(5), int8(1), int8(3), math.NaN(), math.Inf(1), -1.0, 2.0, int16(80), uint8(7), 0.0)
	// Replicas as busy as the primary while the mix changes: a fit reads
	// a replay share of 1.
	f.Add(int8(2), int8(2), int8(1), int8(8), int8(0), int8(4), 0.4, 1.6, 0.5, 0.5, int16(240), uint8(0), 1.0)
	f.Fuzz(func(t *testing.T, replicas, tier, minReplicas, maxReplicas, minTier, maxTier int8, write, read, volume, jitter float64, samples int16, drop uint8, replicaCPU float64) {
		p := policy()
		p.MinReplicas = int32(clampInt(int(minReplicas), 1, 16))
		p.MaxReplicas = int32(clampInt(int(maxReplicas), int(p.MinReplicas), 16))
		p.MinTier = dbpilotv1alpha1.TierAt(clampInt(int(minTier), 0, 4))
		p.MaxTier = dbpilotv1alpha1.TierAt(clampInt(int(maxTier), p.MinTier.Index(), 4))
		p.StorageMaxBytes, p.StorageExpandable = 50*gib, drop%2 == 0
		cur := Size{Replicas: int32(clampInt(int(replicas), 1, 16)), Tier: dbpilotv1alpha1.TierAt(int(tier))}

		var history []Sample
		n := clampInt(int(samples), 0, 300)
		for i := range n {
			at := now.Add(time.Duration(i-n+1) * 15 * time.Second)
			scale := 1 + jitter*math.Sin(float64(i))
			s := sample(at, cur, Load{Write: write * scale, Read: read * (1 + jitter*math.Cos(0.3*float64(i)))}, volume)
			if replicaCPU > 0 {
				// Replicas at replicaCPU times the primary's CPU.
				for j := 1; j < len(s.Pods); j++ {
					s.Pods[j].CPUCores = replicaCPU * s.Pods[0].CPUCores
				}
			}
			if drop > 0 && i%(int(drop)+1) == 0 && len(s.Pods) > 1 {
				s.Pods = s.Pods[1:]
			}
			history = append(history, s)
		}
		in := Input{Now: now, Policy: p, Current: Current{Replicas: cur.Replicas, Tier: cur.Tier, StorageBytes: 10 * gib}, History: history}
		d := Decide(in)
		if d.Replicas < p.MinReplicas || d.Replicas > p.MaxReplicas {
			t.Fatalf("replicas %d outside %d-%d", d.Replicas, p.MinReplicas, p.MaxReplicas)
		}
		if d.Tier.Index() < p.MinTier.Index() || d.Tier.Index() > p.MaxTier.Index() {
			t.Fatalf("tier %s outside %s-%s", d.Tier, p.MinTier, p.MaxTier)
		}
		if d.Reason != ReasonAtBounds || d.Action == ActionHold {
			// Inside the bounds every change is one step: one tier, at
			// most double or half the replicas.
			if dt := d.Tier.Index() - cur.Tier.Index(); dt > 1 || dt < -1 {
				t.Fatalf("tier %s -> %s in one step", cur.Tier, d.Tier)
			}
			if d.Replicas > 2*cur.Replicas || d.Replicas < (cur.Replicas+1)/2 {
				t.Fatalf("replicas %d -> %d in one step", cur.Replicas, d.Replicas)
			}
		}
		if math.IsNaN(d.StorageBytes) || d.StorageBytes < in.Current.StorageBytes || d.StorageBytes > math.Max(p.StorageMaxBytes, in.Current.StorageBytes) {
			t.Fatalf("storage %v from %v", d.StorageBytes, in.Current.StorageBytes)
		}
		for name, v := range d.Signals {
			if math.IsNaN(v) || v < 0 {
				t.Fatalf("signal %s = %v", name, v)
			}
		}
		if again := Decide(in); !reflect.DeepEqual(again, d) {
			t.Fatalf("same input, different decision:\n%+v\n%+v", d, again)
		}
	})
}

func clampInt(v, lo, hi int) int { return max(lo, min(v, hi)) }
