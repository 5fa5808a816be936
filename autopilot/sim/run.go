package sim

import (
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

// Result is one controller's run over one trace.
type Result struct {
	// OverloadPodSeconds sums, over time, the pods whose load exceeds their
	// capacity.
	OverloadPodSeconds float64
	// Cost sums replicas x tier capacity x seconds.
	Cost float64
	// Flaps counts changes of direction within the flap window.
	Flaps int
	// Changes counts size changes.
	Changes int
	// WriteUnavailableSeconds sums the time writes could not be served:
	// switchovers, and primaries restarted without one.
	WriteUnavailableSeconds float64
	// Restarts counts pod restarts, Switchovers the primary's moves, and
	// UnswitchedPrimaryRestarts the primaries restarted while a replica
	// could have taken over, LonePodRestarts the only pods restarted (no
	// writes or reads meanwhile).
	Restarts, Switchovers, UnswitchedPrimaryRestarts, LonePodRestarts int
	// Timeline has one point per interval, for charts.
	Timeline []Point
}

// Point is the state of the simulation at one time.
type Point struct {
	Seconds       float64
	Reads, Writes float64
	Replicas      int32
	Tier          dbpilotv1alpha1.Tier
	// Capacity is the ready pods' total capacity.
	Capacity float64
	// Restarts and Switchovers count the roll events so far.
	Restarts, Switchovers int
}

// controller decides a new size at time t from the world.
type controller interface {
	decide(t float64, w *world, gap bool) (int32, dbpilotv1alpha1.Tier)
}

// run replays the trace through a controller; switchFirst says how tier
// changes roll (see world).
func run(trace Trace, cfg Config, c controller, switchFirst bool) Result {
	w := newWorld(cfg)
	w.switchFirst = switchFirst
	var res Result
	dt := cfg.Interval.Seconds()
	flaps := flapCounter{window: cfg.FlapWindow.Seconds()}
	for t := 0.0; t <= trace.Duration(); t += dt {
		load, gap := trace.At(t)
		overload, cost := w.step(t, dt, load)
		res.OverloadPodSeconds += overload
		res.Cost += cost
		before := w.size()
		replicas, tier := c.decide(t, w, gap)
		after := autopilot.Size{Replicas: replicas, Tier: tier}
		if after != before {
			w.resize(t, replicas, tier)
			res.Changes++
			flaps.record(t, units(after.Replicas, after.Tier)-units(before.Replicas, before.Tier))
		}
		res.Timeline = append(res.Timeline, Point{
			Seconds: t, Reads: load.Read, Writes: load.Write, Replicas: w.provisioned(), Tier: w.tier,
			Capacity: w.servingUnits(t), Restarts: w.restarts, Switchovers: w.switchovers,
		})
	}
	res.Flaps = flaps.count
	res.WriteUnavailableSeconds, res.Restarts, res.Switchovers, res.UnswitchedPrimaryRestarts = w.writesDown, w.restarts, w.switchovers, w.unswitched
	res.LonePodRestarts = w.lone
	return res
}

// flapCounter counts changes whose direction (more or less capacity) differs
// from the previous change's, within the window.
type flapCounter struct {
	window    float64
	last      float64
	direction int
	count     int
}

func (f *flapCounter) record(t, costDelta float64) {
	direction := 1
	if costDelta < 0 {
		direction = -1
	}
	if costDelta == 0 {
		return
	}
	if f.direction != 0 && direction != f.direction && t-f.last < f.window {
		f.count++
	}
	f.last, f.direction = t, direction
}

// RunAutopilot replays the trace through the auto-pilot's decision engine.
func RunAutopilot(trace Trace, cfg Config) Result {
	policy := Bounds
	policy.SettleTime = settleTime(cfg.World)
	return run(trace, cfg, &autopilotController{policy: policy}, true)
}

// settleTime is what the operator's owner sets --autopilot-settle-time to:
// Prometheus' rate window plus a scrape, and a decision interval of margin;
// never under the 90 s the suite was written with.
func settleTime(w World) time.Duration {
	return max(90*time.Second, time.Duration((w.RateWindowSeconds+w.ScrapeSeconds+15)*float64(time.Second)))
}

// RunHPA replays the trace through the HPA baseline.
func RunHPA(trace Trace, cfg Config) Result {
	return run(trace, cfg, &hpaController{hpa: NewHPA(Bounds.MinReplicas, Bounds.MaxReplicas)}, true)
}

// RunHPAVPA replays the trace through the HPA on replicas and a VPA-style
// tier recommender whose updater recreates pods, primary included, without
// a switchover.
func RunHPAVPA(trace Trace, cfg Config) Result {
	return run(trace, cfg, &hpaVPAController{
		hpa: hpaController{hpa: NewHPA(Bounds.MinReplicas, Bounds.MaxReplicas)},
		vpa: NewVPA(Bounds.MinTier, Bounds.MaxTier),
	}, false)
}

// historyLength keeps enough samples for the scale-down window and trends.
const historyLength = 60 * 60 / 15

type autopilotController struct {
	policy  autopilot.Policy
	history []autopilot.Sample
	last    autopilot.LastChanges
	rolling bool
}

func (a *autopilotController) decide(t float64, w *world, gap bool) (int32, dbpilotv1alpha1.Tier) {
	if !gap {
		a.history = append(a.history, w.observe(t))
		if len(a.history) > historyLength {
			a.history = a.history[len(a.history)-historyLength:]
		}
	}
	target := w.size()
	// The operator learns from the API server whether pods resize in
	// place; so does the engine here, from the world.
	inPlace := w.cfg.World.InPlaceResize
	current := autopilot.Current{Replicas: target.Replicas, Tier: target.Tier, GrowsInPlace: inPlace, ShrinksInPlace: inPlace && !w.cfg.World.InPlaceGrowOnly}
	now := simTime(t)
	if w.busy(t) {
		current.Busy = "rollout"
		a.rolling = true
	} else if a.rolling {
		a.rolling = false
		a.last.Settled = now
	}
	d := autopilot.Decide(autopilot.Input{Now: now, Policy: a.policy, Current: current, Last: a.last, History: a.history})
	before := autopilot.Size{Replicas: current.Replicas, Tier: current.Tier}
	after := autopilot.Size{Replicas: d.Replicas, Tier: d.Tier}
	if after != before {
		if after.Tier != before.Tier {
			a.last.Tier = now
		}
		// As the operator's runner: down when it costs less, or as much
		// with a smaller tier (a lone pod's tier down, paired).
		direction := 1
		if after.Cost() < before.Cost() || (after.Cost() == before.Cost() && after.Tier.Index() < before.Tier.Index()) {
			direction = -1
			a.last.ReplicasDown = now
		} else {
			a.last.ReplicasUp = now
		}
		a.last.Direction, a.last.DirectionTime = direction, now
	}
	return d.Replicas, d.Tier
}

type hpaController struct {
	hpa *HPA
}

func (h *hpaController) decide(t float64, w *world, gap bool) (int32, dbpilotv1alpha1.Tier) {
	s := w.observe(t)
	size, _ := w.tier.Size()
	var total float64
	for _, p := range s.Pods {
		total += p.CPUCores / size.CPU.AsApproximateFloat64()
	}
	utilization := total / float64(max(1, len(s.Pods)))
	return h.hpa.Desired(simTime(t), w.provisioned(), utilization, !gap && len(s.Pods) > 0), w.tier
}

type hpaVPAController struct {
	hpa hpaController
	vpa *VPA
}

func (h *hpaVPAController) decide(t float64, w *world, gap bool) (int32, dbpilotv1alpha1.Tier) {
	replicas, tier := h.hpa.decide(t, w, gap)
	if !gap {
		for _, p := range w.observe(t).Pods {
			h.vpa.Observe(t, p.CPUCores)
		}
	}
	if !w.busy(t) {
		tier = h.vpa.Desired(t, tier)
	}
	return replicas, tier
}
