package sim

import (
	"math"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

// Config holds the simulation's delays, after ../../README of this package.
type Config struct {
	// Interval is how often both controllers decide (HPA's sync period).
	Interval time.Duration
	// ScrapeDelay is how old the newest metrics are when read.
	ScrapeDelay time.Duration
	// RateWindow is the window CPU rates are averaged over.
	RateWindow time.Duration
	// CloneTime is how long a new replica takes to serve.
	CloneTime time.Duration
	// RollTime is how long a tier change takes to roll through the pods.
	RollTime time.Duration
	// FlapWindow: a change of direction within it is a flap.
	FlapWindow time.Duration
}

// DefaultConfig is a 15 s sync, 15 s scrape, 1 min rate window, 2 min clone
// and 3 min tier roll.
func DefaultConfig() Config {
	return Config{
		Interval: 15 * time.Second, ScrapeDelay: 15 * time.Second, RateWindow: time.Minute,
		CloneTime: autopilot.ReplicaLeadTime, RollTime: autopilot.TierLeadTime, FlapWindow: 10 * time.Minute,
	}
}

// Start is the size every trace starts at, and Bounds what both controllers
// may use: 1-8 replicas, tiers small-2xlarge. The HPA keeps the start tier.
var (
	StartReplicas int32 = 2
	StartTier           = dbpilotv1alpha1.TierMedium
	Bounds              = autopilot.Policy{
		MinReplicas: 1, MaxReplicas: 8, MinTier: dbpilotv1alpha1.TierSmall, MaxTier: dbpilotv1alpha1.Tier2XLarge,
		CPUTarget: 0.7, MemoryTarget: 0.8, ConnectionTarget: 0.8,
		ScaleUpStabilization: 60 * time.Second, ScaleDownStabilization: 600 * time.Second, TierCooldown: 900 * time.Second,
		SettleTime: 90 * time.Second,
	}
)

// world is the simulated database: pods that serve once ready, and a tier
// that changes once its roll finishes.
type world struct {
	cfg Config
	// readyAt holds, per pod, when it starts serving; pod 0 is the primary.
	readyAt  []float64
	tier     dbpilotv1alpha1.Tier
	nextTier dbpilotv1alpha1.Tier
	tierAt   float64
	// shedTo is how many pods remain once the tier change has rolled out:
	// a resize to a new tier and fewer pods keeps them all until then.
	shedTo int32
	// truth records each step's true utilizations, for delayed metrics.
	truth []truthPoint
}

type truthPoint struct {
	at               float64
	replicas         int32
	tier             dbpilotv1alpha1.Tier
	primary, replica float64
	load             autopilot.Load
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, tier: StartTier, nextTier: StartTier}
	for range StartReplicas {
		w.readyAt = append(w.readyAt, 0)
	}
	return w
}

// ready is the number of pods serving at time t.
func (w *world) ready(t float64) int32 {
	var n int32
	for _, at := range w.readyAt {
		if at <= t {
			n++
		}
	}
	return n
}

func (w *world) provisioned() int32 { return int32(len(w.readyAt)) }

// busy reports whether a clone or a roll is in progress at t.
func (w *world) busy(t float64) bool {
	return w.ready(t) < w.provisioned() || w.nextTier != w.tier
}

// resize moves towards replicas pods of tier: new pods serve after the clone
// time, removed pods go at once (newest first), a tier change lands after the
// roll time.
func (w *world) resize(t float64, replicas int32, tier dbpilotv1alpha1.Tier) {
	for w.provisioned() < replicas {
		w.readyAt = append(w.readyAt, t+w.cfg.CloneTime.Seconds())
	}
	if tier != w.tier && tier != w.nextTier {
		w.nextTier, w.tierAt = tier, t+w.cfg.RollTime.Seconds()
	}
	w.shedTo = 0
	if w.provisioned() > replicas {
		if w.nextTier != w.tier {
			w.shedTo = max(1, replicas)
			return
		}
		w.readyAt = w.readyAt[:max(1, replicas)]
	}
}

// size is the number of pods and the tier the world is heading for.
func (w *world) size() autopilot.Size {
	n := w.provisioned()
	if w.shedTo > 0 {
		n = w.shedTo
	}
	return autopilot.Size{Replicas: n, Tier: w.nextTier}
}

// step advances to time t under load, recording truth, and returns the
// overloaded pod-seconds and the cost of the interval dt.
func (w *world) step(t, dt float64, load autopilot.Load) (overload, cost float64) {
	if w.nextTier != w.tier && t >= w.tierAt {
		w.tier = w.nextTier
		if w.shedTo > 0 {
			w.readyAt, w.shedTo = w.readyAt[:w.shedTo], 0
		}
	}
	n := w.ready(t)
	u := autopilot.Predict(load, n, w.tier)
	w.truth = append(w.truth, truthPoint{at: t, replicas: n, tier: w.tier, primary: u.Primary, replica: u.Replica, load: load})
	if u.Primary > 1 {
		overload += dt
	}
	if n > 1 && u.Replica > 1 {
		overload += float64(n-1) * dt
	}
	c := autopilot.Capacity(w.tier)
	if w.nextTier != w.tier {
		c = math.Max(c, autopilot.Capacity(w.nextTier))
	}
	return overload, float64(w.provisioned()) * c * dt
}

// observe returns the metrics a controller reads at time t: utilizations
// averaged over the rate window and delayed by the scrape, capped at 100 %
// (a saturated pod cannot show how much more it is asked for), as a sample
// of the size the database has at t.
func (w *world) observe(t float64) autopilot.Sample {
	end := t - w.cfg.ScrapeDelay.Seconds()
	begin := end - w.cfg.RateWindow.Seconds()
	var primary, replica, reads, writes float64
	var count float64
	for i := len(w.truth) - 1; i >= 0 && w.truth[i].at > begin; i-- {
		p := w.truth[i]
		if p.at > end {
			continue
		}
		// CPU is measured in cores: a pod of another tier in the window
		// counts with its own cores.
		size, _ := p.tier.Size()
		cores := size.CPU.AsApproximateFloat64()
		primary += math.Min(1, p.primary) * cores
		replica += math.Min(1, p.replica) * cores
		reads += p.load.Read
		writes += p.load.Write
		count++
	}
	n := w.ready(t)
	if count == 0 {
		// Nothing scraped yet: no pods in the sample.
		return autopilot.Sample{Time: simTime(t), Replicas: n, Tier: w.tier}
	}
	size, _ := w.tier.Size()
	memory := size.Memory.AsApproximateFloat64() / 2
	s := autopilot.Sample{Time: simTime(t), Replicas: n, Tier: w.tier}
	for i := range n {
		cores := replica / count
		if i == 0 {
			cores = primary / count
		}
		pod := autopilot.PodSample{
			Primary: i == 0, CPUCores: cores, MemoryBytes: memory,
			Connections: 40 * cores, MaxConnections: float64(size.MaxConnections),
			ReadRate: 100 * reads / count / float64(n),
		}
		if i == 0 {
			pod.WriteRate = 100 * writes / count
		}
		s.Pods = append(s.Pods, pod)
	}
	return s
}

// epoch anchors simulated seconds to a time for the engine.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func simTime(t float64) time.Time {
	return epoch.Add(time.Duration(t * float64(time.Second)))
}
