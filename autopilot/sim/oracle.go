package sim

import (
	"math"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

// OracleRule is what a size must hold every pod to for the oracle to count
// it as serving a load: the pods' average CPU at most Average, and no pod
// above Hottest, as shares of their cores.
type OracleRule struct {
	Average, Hottest float64
}

var (
	// WithinTolerance is the laxest rule the HPA leaves alone: its target
	// and its tolerance (70 % and 10 %: 77 % on average), no pod above 95 %.
	WithinTolerance = OracleRule{Average: hpaTarget * (1 + hpaTolerance), Hottest: 0.95}
	// AtTarget is the rule the HPA sizes for when it scales: its target
	// itself (70 % on average), no pod above 95 %. A controller that keeps
	// the owner's target cannot cost less than the oracle under this rule.
	AtTarget = OracleRule{Average: hpaTarget, Hottest: 0.95}
)

// Directions of the oracle's last change.
const (
	unchanged = iota
	grew
	shrank
)

// OracleCost is a floor under the cost of any controller that never flaps
// and keeps every pod within rule: the cheapest run of sizes
// within Bounds, from the start size, that serves the whole trace so, found
// knowing the trace in advance and with every change instant (no clone, no
// restart, no metrics delay). A change of direction within the flap window
// is not allowed, so the run has no flap and, by the rule, no overload. A
// demand that no size serves is given the biggest size.
//
// It is a dynamic program over states (size, direction of the last change,
// intervals since it, capped at the flap window).
func OracleCost(trace Trace, cfg Config, rule OracleRule) float64 {
	w := newWorld(cfg)
	sizes := oracleSizes()
	window := int(math.Ceil(cfg.FlapWindow.Seconds() / cfg.Interval.Seconds()))
	index := func(size, direction, since int) int { return (size*3+direction)*(window+1) + since }
	cost := make([]float64, len(sizes)*3*(window+1))
	next := make([]float64, len(cost))
	fill(cost, math.Inf(1))
	for i, s := range sizes {
		if s.Replicas == StartReplicas && s.Tier == StartTier {
			cost[index(i, unchanged, window)] = 0
		}
	}
	// mayGrow[i] and mayShrink[i] are the cheapest states of size i from
	// which a change up (down) is no flap.
	mayGrow := make([]float64, len(sizes))
	mayShrink := make([]float64, len(sizes))
	dt := cfg.Interval.Seconds()
	for t := 0.0; t <= trace.Duration(); t += dt {
		load, _ := trace.At(t)
		serving := oracleServing(w, sizes, load, rule)
		fill(mayGrow, math.Inf(1))
		fill(mayShrink, math.Inf(1))
		for i := range sizes {
			for since := 0; since <= window; since++ {
				settled := since == window
				for direction := range 3 {
					c := cost[index(i, direction, since)]
					if direction != shrank || settled {
						mayGrow[i] = math.Min(mayGrow[i], c)
					}
					if direction != grew || settled {
						mayShrink[i] = math.Min(mayShrink[i], c)
					}
				}
			}
		}
		fill(next, math.Inf(1))
		keep := func(i int, c float64) {
			if c < next[i] {
				next[i] = c
			}
		}
		for to, ok := range serving {
			if !ok {
				continue
			}
			toUnits := units(sizes[to].Replicas, sizes[to].Tier)
			step := toUnits * dt
			for from := range sizes {
				fromUnits := units(sizes[from].Replicas, sizes[from].Tier)
				switch {
				case toUnits > fromUnits:
					keep(index(to, grew, 1), mayGrow[from]+step)
				case toUnits < fromUnits:
					keep(index(to, shrank, 1), mayShrink[from]+step)
				default:
					// The same capacity (this size, or another of the
					// same cost): no change of direction.
					for direction := range 3 {
						for since := 0; since <= window; since++ {
							keep(index(to, direction, min(since+1, window)), cost[index(from, direction, since)]+step)
						}
					}
				}
			}
		}
		cost, next = next, cost
	}
	best := math.Inf(1)
	for _, c := range cost {
		best = math.Min(best, c)
	}
	return best
}

func fill(s []float64, v float64) {
	for i := range s {
		s[i] = v
	}
}

// oracleSizes are the sizes Bounds allows, the biggest last.
func oracleSizes() []autopilot.Size {
	var sizes []autopilot.Size
	for t := Bounds.MinTier.Index(); t <= Bounds.MaxTier.Index(); t++ {
		for n := Bounds.MinReplicas; n <= Bounds.MaxReplicas; n++ {
			sizes = append(sizes, autopilot.Size{Replicas: n, Tier: dbpilotv1alpha1.TierAt(t)})
		}
	}
	return sizes
}

// oracleServing says which sizes serve load within rule, by the world's own
// demand; when none does, the biggest.
func oracleServing(w *world, sizes []autopilot.Size, load autopilot.Load, rule OracleRule) []bool {
	serving := make([]bool, len(sizes))
	some := false
	for i, s := range sizes {
		primary, replica := w.cpuDemand(load, s.Replicas, true)
		cores, n := podCores(s.Tier), float64(s.Replicas)
		average := (primary + (n-1)*replica) / n / cores
		serving[i] = average <= rule.Average && primary/cores <= rule.Hottest && replica/cores <= rule.Hottest
		some = some || serving[i]
	}
	if !some {
		serving[len(serving)-1] = true
	}
	return serving
}
