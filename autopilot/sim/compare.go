package sim

import "fmt"

// Comparison is the auto-pilot's and the HPA's results on the same traces.
type Comparison struct {
	Autopilot, HPA Result
}

// Compare replays one trace through both controllers.
func Compare(trace Trace, cfg Config) Comparison {
	return Comparison{Autopilot: RunAutopilot(trace, cfg), HPA: RunHPA(trace, cfg)}
}

// Add sums two comparisons (timelines are not kept).
func (c Comparison) Add(o Comparison) Comparison {
	add := func(a, b Result) Result {
		return Result{
			OverloadPodSeconds: a.OverloadPodSeconds + b.OverloadPodSeconds,
			Cost:               a.Cost + b.Cost,
			Flaps:              a.Flaps + b.Flaps,
			Changes:            a.Changes + b.Changes,
		}
	}
	return Comparison{Autopilot: add(c.Autopilot, o.Autopilot), HPA: add(c.HPA, o.HPA)}
}

// OverloadRatio is the auto-pilot's overloaded pod-seconds over the HPA's.
func (c Comparison) OverloadRatio() float64 {
	if c.HPA.OverloadPodSeconds == 0 {
		if c.Autopilot.OverloadPodSeconds == 0 {
			return 0
		}
		return 1e9
	}
	return c.Autopilot.OverloadPodSeconds / c.HPA.OverloadPodSeconds
}

// CostRatio is the auto-pilot's cost over the HPA's.
func (c Comparison) CostRatio() float64 { return c.Autopilot.Cost / c.HPA.Cost }

// Summary is the final line of the simulator's output.
func (c Comparison) Summary() string {
	return fmt.Sprintf("autopilot/hpa overload_ratio=%.3f cost_ratio=%.3f flaps_autopilot=%d flaps_hpa=%d",
		c.OverloadRatio(), c.CostRatio(), c.Autopilot.Flaps, c.HPA.Flaps)
}
