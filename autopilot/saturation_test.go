package autopilot

import (
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestSaturatedLonePodWaitsHalfTheWindow: a lone pod saturated in the two
// newest samples scales up after half the stabilization window; one
// saturated sample, a breach short of saturation, two pods, or CPU noisy
// enough to fake saturation wait the whole window.
func TestSaturatedLonePodWaitsHalfTheWindow(t *testing.T) {
	oneMedium := Size{Replicas: 1, Tier: dbpilotv1alpha1.TierMedium}
	quiet, hot, warm := Load{Write: 0.1, Read: 0.4}, Load{Write: 0.3, Read: 6}, Load{Write: 0.1, Read: 1.8}
	// history is ten quiet minutes, then the newest samples at their loads.
	history := func(s Size, noise float64, newest ...Load) []Sample {
		h := steady(s, quiet, 10*time.Minute)
		h = append(noisy(h[:len(h)-len(newest)], noise, 3), h[len(h)-len(newest):]...)
		for i, load := range newest {
			h[len(h)-len(newest)+i] = sample(h[len(h)-len(newest)+i].Time, s, load, 0.5)
		}
		return h
	}
	for _, c := range []struct {
		name    string
		size    Size
		history []Sample
		up      bool
	}{
		{"saturated 30 s", oneMedium, history(oneMedium, 0, hot, hot, hot), true},
		{"saturated 15 s", oneMedium, history(oneMedium, 0, hot, hot), false},
		{"above target 30 s, saturated in the newest sample only", oneMedium, history(oneMedium, 0, warm, warm, hot), false},
		{"above target 45 s, short of saturation", oneMedium, history(oneMedium, 0, warm, warm, warm, warm), false},
		{"two pods saturated 30 s", twoMedium, history(twoMedium, 0, hot, hot, hot), false},
		{"saturated 30 s after noisy CPU", oneMedium, history(oneMedium, 0.3, hot, hot, hot), false},
		{"saturated 60 s after noisy CPU", oneMedium, history(oneMedium, 0.3, hot, hot, hot, hot, hot), true},
	} {
		in := input(c.size, c.history)
		in.Last = LastChanges{Direction: -1, DirectionTime: now.Add(-time.Hour)}
		d := Decide(in)
		up := d.Replicas > c.size.Replicas || d.Tier != c.size.Tier
		if up != c.up {
			t.Errorf("%s: decided %d %s pods (%s: %s), want a scale-up %t", c.name, d.Replicas, d.Tier, d.Reason, d.Message, c.up)
		}
		if !up && d.Reason != ReasonStabilizing {
			t.Errorf("%s: held for %s (%s), want %s", c.name, d.Reason, d.Message, ReasonStabilizing)
		}
	}
}
