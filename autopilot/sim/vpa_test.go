package sim

import (
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

func TestVPATargetsTheNinetiethPercentileWithMargin(t *testing.T) {
	v := NewVPA(dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.Tier2XLarge)
	// 90 % of samples at 0.8 cores, 10 % at 3: the 90th percentile is 0.8,
	// 0.92 with the margin: a medium pod (1 core).
	for i := range 100 {
		cores := 0.8
		if i%10 == 0 {
			cores = 3
		}
		v.Observe(float64(i), cores)
	}
	if got := v.Desired(100, dbpilotv1alpha1.TierSmall); got != dbpilotv1alpha1.TierMedium {
		t.Errorf("desired %s, want medium", got)
	}
	// Within the minimum interval nothing changes, even when needed.
	for i := range 1000 {
		v.Observe(float64(101+i), 3)
	}
	if got := v.Desired(200, dbpilotv1alpha1.TierMedium); got != dbpilotv1alpha1.TierMedium {
		t.Errorf("desired %s within the minimum interval, want medium kept", got)
	}
	// 3 cores with the margin: 3.45, an xlarge pod (4 cores).
	if got := v.Desired(800, dbpilotv1alpha1.TierMedium); got != dbpilotv1alpha1.TierXLarge {
		t.Errorf("desired %s, want xlarge", got)
	}
}

func TestVPAForgetsOutsideItsWindow(t *testing.T) {
	v := NewVPA(dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.Tier2XLarge)
	v.Window = 3600
	v.Observe(0, 7)
	v.Observe(4000, 0.2)
	if got := v.Desired(4000, dbpilotv1alpha1.TierXLarge); got != dbpilotv1alpha1.TierSmall {
		t.Errorf("desired %s, want small once the old peak is out of the window", got)
	}
}
