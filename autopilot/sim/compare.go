package sim

import "fmt"

// Comparison is the auto-pilot's, the HPA's and the HPA with a VPA's results
// on the same traces, and the oracle's cost: a floor under what any
// controller that neither flaps nor overloads can cost there.
type Comparison struct {
	Autopilot, HPA, HPAVPA Result
	OracleCost             float64
	// Dominated counts the traces on which the HPA had both less overload
	// and less cost than the auto-pilot.
	Dominated int
}

// Compare replays one trace through the three controllers.
func Compare(trace Trace, cfg Config) Comparison {
	c := Comparison{Autopilot: RunAutopilot(trace, cfg), HPA: RunHPA(trace, cfg), HPAVPA: RunHPAVPA(trace, cfg), OracleCost: OracleCost(trace, cfg)}
	if c.HPA.OverloadPodSeconds < c.Autopilot.OverloadPodSeconds && c.HPA.Cost < c.Autopilot.Cost {
		c.Dominated = 1
	}
	return c
}

// CompareSuite replays every trace in cfg and sums the comparisons.
func CompareSuite(traces []Trace, cfg Config) Comparison {
	var total Comparison
	for _, trace := range traces {
		total = total.Add(Compare(trace, cfg))
	}
	return total
}

// Add sums two comparisons (timelines are not kept).
func (c Comparison) Add(o Comparison) Comparison {
	add := func(a, b Result) Result {
		return Result{
			OverloadPodSeconds:        a.OverloadPodSeconds + b.OverloadPodSeconds,
			Cost:                      a.Cost + b.Cost,
			Flaps:                     a.Flaps + b.Flaps,
			Changes:                   a.Changes + b.Changes,
			WriteUnavailableSeconds:   a.WriteUnavailableSeconds + b.WriteUnavailableSeconds,
			Restarts:                  a.Restarts + b.Restarts,
			Switchovers:               a.Switchovers + b.Switchovers,
			UnswitchedPrimaryRestarts: a.UnswitchedPrimaryRestarts + b.UnswitchedPrimaryRestarts,
			LonePodRestarts:           a.LonePodRestarts + b.LonePodRestarts,
		}
	}
	return Comparison{
		Autopilot: add(c.Autopilot, o.Autopilot), HPA: add(c.HPA, o.HPA), HPAVPA: add(c.HPAVPA, o.HPAVPA),
		Dominated: c.Dominated + o.Dominated, OracleCost: c.OracleCost + o.OracleCost,
	}
}

// ratio is a/b, 0 when both are 0 and 1e9 when only b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return 1e9
	}
	return a / b
}

// OverloadRatio is the auto-pilot's overloaded pod-seconds over the HPA's.
func (c Comparison) OverloadRatio() float64 {
	return ratio(c.Autopilot.OverloadPodSeconds, c.HPA.OverloadPodSeconds)
}

// CostRatio is the auto-pilot's cost over the HPA's.
func (c Comparison) CostRatio() float64 { return c.Autopilot.Cost / c.HPA.Cost }

// OracleLine compares the oracle with the HPA, and the auto-pilot with the
// oracle: how much cheaper than the HPA a controller could be without a
// flap or an overloaded pod, knowing the future and changing size
// instantly, and how far above that floor the auto-pilot is.
func (c Comparison) OracleLine() string {
	return fmt.Sprintf("oracle/hpa cost_ratio=%.3f autopilot/oracle cost_ratio=%.3f", c.OracleCost/c.HPA.Cost, c.Autopilot.Cost/c.OracleCost)
}

// Summary is the final two lines of the simulator's output: the auto-pilot
// against the HPA, and against the HPA with a VPA.
func (c Comparison) Summary() string {
	return fmt.Sprintf("autopilot/hpa overload_ratio=%.3f cost_ratio=%.3f flaps_autopilot=%d flaps_hpa=%d write_unavailable_s=%.0f unswitched_primary_restarts=%d dominated_traces=%d\n"+
		"autopilot/hpa+vpa overload_ratio=%.3f cost_ratio=%.3f write_unavailable_ratio=%.3f",
		c.OverloadRatio(), c.CostRatio(), c.Autopilot.Flaps, c.HPA.Flaps, c.Autopilot.WriteUnavailableSeconds, c.Autopilot.UnswitchedPrimaryRestarts, c.Dominated,
		ratio(c.Autopilot.OverloadPodSeconds, c.HPAVPA.OverloadPodSeconds), c.Autopilot.Cost/c.HPAVPA.Cost,
		ratio(c.Autopilot.WriteUnavailableSeconds, c.HPAVPA.WriteUnavailableSeconds))
}
