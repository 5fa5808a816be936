package sim

import "fmt"

// Comparison is the auto-pilot's, the HPA's and the HPA with a VPA's results
// on the same traces, and the oracle's costs: floors under what any
// controller that never flaps can cost there with every pod within the
// HPA's tolerance (OracleCost), or at its target (OracleAtTargetCost).
type Comparison struct {
	Autopilot, HPA, HPAVPA         Result
	OracleCost, OracleAtTargetCost float64
	// Dominated counts the traces on which the HPA had both less overload
	// and less cost than the auto-pilot.
	Dominated int
}

// Compare replays one trace through the three controllers.
func Compare(trace Trace, cfg Config) Comparison {
	c := Comparison{
		Autopilot: RunAutopilot(trace, cfg), HPA: RunHPA(trace, cfg), HPAVPA: RunHPAVPA(trace, cfg),
		OracleCost: OracleCost(trace, cfg, WithinTolerance), OracleAtTargetCost: OracleCost(trace, cfg, AtTarget),
	}
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
		Dominated: c.Dominated + o.Dominated, OracleCost: c.OracleCost + o.OracleCost, OracleAtTargetCost: c.OracleAtTargetCost + o.OracleAtTargetCost,
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

// OracleLine compares both oracles with the HPA, and the auto-pilot with
// them: how much cheaper than the HPA a controller could be without a flap
// or an overloaded pod, knowing the future and changing size instantly,
// with every pod within the HPA's tolerance or at its target, and how far
// above each floor the auto-pilot is.
func (c Comparison) OracleLine() string {
	return fmt.Sprintf("oracle/hpa cost_ratio=%.3f autopilot/oracle cost_ratio=%.3f oracle_at_target/hpa cost_ratio=%.3f autopilot/oracle_at_target cost_ratio=%.3f",
		c.OracleCost/c.HPA.Cost, c.Autopilot.Cost/c.OracleCost, c.OracleAtTargetCost/c.HPA.Cost, c.Autopilot.Cost/c.OracleAtTargetCost)
}

// OracleAtTargetRatio is the oracle at target's cost over the HPA's: the
// least cost ratio a flap-free controller that keeps the target can reach.
func (c Comparison) OracleAtTargetRatio() float64 { return c.OracleAtTargetCost / c.HPA.Cost }

// Summary is the final two lines of the simulator's output: the auto-pilot
// against the HPA, and against the HPA with a VPA.
func (c Comparison) Summary() string {
	return fmt.Sprintf("autopilot/hpa overload_ratio=%.3f cost_ratio=%.3f flaps_autopilot=%d flaps_hpa=%d write_unavailable_s=%.0f unswitched_primary_restarts=%d dominated_traces=%d\n"+
		"autopilot/hpa+vpa overload_ratio=%.3f cost_ratio=%.3f write_unavailable_ratio=%.3f",
		c.OverloadRatio(), c.CostRatio(), c.Autopilot.Flaps, c.HPA.Flaps, c.Autopilot.WriteUnavailableSeconds, c.Autopilot.UnswitchedPrimaryRestarts, c.Dominated,
		ratio(c.Autopilot.OverloadPodSeconds, c.HPAVPA.OverloadPodSeconds), c.Autopilot.Cost/c.HPAVPA.Cost,
		ratio(c.Autopilot.WriteUnavailableSeconds, c.HPAVPA.WriteUnavailableSeconds))
}
