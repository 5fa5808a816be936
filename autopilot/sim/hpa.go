package sim

import (
	"math"
	"time"
)

// HPA is the Kubernetes HorizontalPodAutoscaler algorithm as documented, on
// CPU utilization: desired = ceil(current * utilization / target), no change
// within the tolerance, scale-up limited to max(100 %, 4 pods) per sync,
// scale-down to the highest recommendation of the stabilization window, all
// within min and max replicas. It never changes the tier.
type HPA struct {
	Target                 float64
	Tolerance              float64
	MinReplicas            int32
	MaxReplicas            int32
	ScaleDownStabilization time.Duration

	recommendations []recommendation
}

type recommendation struct {
	at       time.Time
	replicas int32
}

// The baseline's CPU target and Kubernetes' default tolerance.
const (
	hpaTarget    = 0.7
	hpaTolerance = 0.1
)

// NewHPA returns the baseline with Kubernetes' defaults and a 70 % CPU target.
func NewHPA(minReplicas, maxReplicas int32) *HPA {
	return &HPA{Target: hpaTarget, Tolerance: hpaTolerance, MinReplicas: minReplicas, MaxReplicas: maxReplicas, ScaleDownStabilization: 300 * time.Second}
}

// Desired returns the replica count for the current count and the average
// CPU utilization of the ready pods at time now. ok false (missing metrics)
// keeps the current count, as the HPA does.
func (h *HPA) Desired(now time.Time, current int32, utilization float64, ok bool) int32 {
	if !ok {
		return current
	}
	desired := current
	// Like the HPA, in whole percent: utilization = used * 100 / requested.
	ratio := math.Floor(utilization*100+1e-9) / math.Round(h.Target*100)
	if math.Abs(ratio-1) > h.Tolerance {
		desired = int32(math.Ceil(float64(current) * ratio))
	}
	// Scale-up limit: at most double, or four more pods, per sync period.
	desired = min(desired, max(2*current, current+4))
	desired = max(h.MinReplicas, min(desired, h.MaxReplicas))

	// Scale-down stabilization: the highest recommendation in the window.
	h.recommendations = append(h.recommendations, recommendation{at: now, replicas: desired})
	kept := h.recommendations[:0]
	stabilized := desired
	for _, r := range h.recommendations {
		if now.Sub(r.at) <= h.ScaleDownStabilization {
			kept = append(kept, r)
			stabilized = max(stabilized, r.replicas)
		}
	}
	h.recommendations = kept
	if desired < current {
		return min(current, stabilized)
	}
	return desired
}
