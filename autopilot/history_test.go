package autopilot

import (
	"math"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestTrendIsNotReadIntoNoise: a load that swings around a small drift
// rises in both halves of the window and by more than 10 %, but its slope
// lies within three standard errors of zero, so it is not extrapolated; the
// same drift without the swings is.
func TestTrendIsNotReadIntoNoise(t *testing.T) {
	twoLarge := Size{Replicas: 2, Tier: dbpilotv1alpha1.TierLarge}
	trend := func(swing float64) Load {
		var history []Sample
		for i := range 21 {
			at := now.Add(time.Duration(i-20) * 15 * time.Second)
			read := 2 + swing*math.Sin(2.3*float64(i)) + 0.02*float64(i)
			history = append(history, sample(at, twoLarge, Load{Write: 0.5, Read: read}, 0.5))
		}
		got, ok := estimator{m: Assumed}.loadTrend(history, now, span{}, minTrendRise)
		if !ok {
			t.Fatalf("swing %.1f: trend unknown over 5 minutes of samples", swing)
		}
		return got
	}
	if got := trend(0.5); got.Read != 0 {
		t.Errorf("swinging by 0.5 around a drift of 0.02 a sample: read trend %.5f/s, want 0", got.Read)
	}
	if got := trend(0); math.Abs(got.Read-0.02/15) > 1e-4 {
		t.Errorf("a steady drift of 0.02 a sample: read trend %.5f/s, want %.5f/s", got.Read, 0.02/15)
	}
}
