package sim

import (
	"math"
	"slices"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// VPA is a tier recommender in the manner of the Kubernetes
// VerticalPodAutoscaler: its target is the 90th percentile of the pods' CPU
// over a long window (every sample it has seen, up to Window), with a
// Margin on top, rounded up to the smallest tier whose pods have that much
// CPU; its updater applies a new target by recreating the pods, at most once
// per MinInterval seconds, and only when the target differs from the tier
// the pods run. It knows nothing of primaries.
type VPA struct {
	Percentile  float64
	Margin      float64
	Window      float64
	MinInterval float64
	MinTier     dbpilotv1alpha1.Tier
	MaxTier     dbpilotv1alpha1.Tier

	samples []cpuSample
	applied float64
}

type cpuSample struct {
	at, cores float64
}

// NewVPA returns the recommender with VPA's 90th percentile and 15 % margin,
// a 24-hour window and 10 minutes between updates.
func NewVPA(minTier, maxTier dbpilotv1alpha1.Tier) *VPA {
	return &VPA{Percentile: 0.9, Margin: 0.15, Window: 24 * 3600, MinInterval: 600, MinTier: minTier, MaxTier: maxTier, applied: math.Inf(-1)}
}

// Observe records one pod's CPU, in cores, at t (seconds).
func (v *VPA) Observe(t, cores float64) {
	v.samples = append(v.samples, cpuSample{at: t, cores: cores})
}

// Desired returns the tier the pods should run at t, given the tier they run.
func (v *VPA) Desired(t float64, current dbpilotv1alpha1.Tier) dbpilotv1alpha1.Tier {
	first := 0
	for first < len(v.samples) && v.samples[first].at < t-v.Window {
		first++
	}
	v.samples = v.samples[first:]
	if len(v.samples) == 0 || t-v.applied < v.MinInterval {
		return current
	}
	cores := make([]float64, len(v.samples))
	for i, s := range v.samples {
		cores[i] = s.cores
	}
	slices.Sort(cores)
	target := cores[int(math.Ceil(v.Percentile*float64(len(cores))))-1] * (1 + v.Margin)
	tier := v.MaxTier
	for i := v.MinTier.Index(); i <= v.MaxTier.Index(); i++ {
		if podCores(dbpilotv1alpha1.TierAt(i)) >= target {
			tier = dbpilotv1alpha1.TierAt(i)
			break
		}
	}
	if tier != current {
		v.applied = t
	}
	return tier
}
