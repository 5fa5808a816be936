package sim

import (
	"math"
	"math/rand/v2"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

// Config holds the simulation's world and the controllers' cadence.
type Config struct {
	// World is the simulated database.
	World World
	// Interval is how often both controllers decide (HPA's sync period).
	Interval time.Duration
	// RollTime is how long a tier change takes to roll through the pods.
	RollTime time.Duration
	// FlapWindow: a change of direction within it is a flap.
	FlapWindow time.Duration
}

// DefaultConfig is the default world, a 15 s sync and a 3 min tier roll.
func DefaultConfig() Config {
	return ConfigFor(DefaultWorld())
}

// ConfigFor is DefaultConfig in world w.
func ConfigFor(w World) Config {
	return Config{World: w, Interval: 15 * time.Second, RollTime: 3 * time.Minute, FlapWindow: 10 * time.Minute}
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
// that changes once its roll finishes. Its physics is its own code: the
// engine judged here learns it only from the metrics.
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
	// truth records each step's true CPU demand, for delayed metrics.
	truth []truthPoint
	noise *rand.Rand
}

type truthPoint struct {
	at       float64
	replicas int32
	tier     dbpilotv1alpha1.Tier
	// primary and replica are the CPU cores the pods are asked for, which
	// may be more than they have.
	primary, replica float64
	load             autopilot.Load
}

// unitCores is the CPU, in cores, that one unit of a trace's demand takes:
// a small pod (half a core) serves one unit flat out.
const unitCores = 0.5

// podCores is the CPU one pod of the tier has: its limit in the tier table.
func podCores(t dbpilotv1alpha1.Tier) float64 {
	size, _ := t.Size()
	return size.CPU.AsApproximateFloat64()
}

// units is the demand, in trace units, that pods of the tier serve flat out.
func units(pods int32, t dbpilotv1alpha1.Tier) float64 {
	return float64(pods) * podCores(t) / unitCores
}

// cpuDemand is what load asks of the primary and of each replica when n pods
// serve it, in cores: writes are executed on the primary and replayed on
// every replica at the world's share; reads for the -ro Service go to the
// replicas alone, the rest spread over every pod.
func (w *world) cpuDemand(load autopilot.Load, n int32) (primary, replica float64) {
	if n <= 1 {
		return unitCores * (load.Write + load.Read), 0
	}
	spread := load.Read * (1 - load.ReplicaOnly) / float64(n)
	primary = unitCores * (load.Write + spread)
	replica = unitCores * (w.cfg.World.ReplicaWriteShare*load.Write + spread + load.Read*load.ReplicaOnly/float64(n-1))
	return primary, replica
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, tier: StartTier, nextTier: StartTier, noise: rand.New(rand.NewPCG(cfg.World.Seed, 0x5eed))}
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
		w.readyAt = append(w.readyAt, t+w.cfg.World.CloneSeconds)
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
	primary, replica := w.cpuDemand(load, n)
	w.truth = append(w.truth, truthPoint{at: t, replicas: n, tier: w.tier, primary: primary, replica: replica, load: load})
	cores := podCores(w.tier)
	if primary > cores {
		overload += dt
	}
	if n > 1 && replica > cores {
		overload += float64(n-1) * dt
	}
	// During a roll every pod is paid for at the bigger of the two tiers.
	paid := units(w.provisioned(), w.tier)
	if w.nextTier != w.tier {
		paid = math.Max(paid, units(w.provisioned(), w.nextTier))
	}
	return overload, paid * dt
}

// observe returns the metrics a controller reads at time t: CPU averaged
// over the rate window and delayed by the scrape, capped at what the pod has
// (a saturated pod cannot show how much more it is asked for), with the
// world's measurement noise, as a sample of the size the database has at t.
func (w *world) observe(t float64) autopilot.Sample {
	end := t - w.cfg.World.ScrapeSeconds
	begin := end - w.cfg.World.RateWindowSeconds
	var primary, replica, reads, writes float64
	var count float64
	for i := len(w.truth) - 1; i >= 0 && w.truth[i].at > begin; i-- {
		p := w.truth[i]
		if p.at > end {
			continue
		}
		// A pod of another tier in the window counts with its own cores.
		cores := podCores(p.tier)
		primary += math.Min(cores, p.primary)
		replica += math.Min(cores, p.replica)
		reads += p.load.Read
		writes += p.load.Write
		count++
	}
	n := w.ready(t)
	s := autopilot.Sample{Time: simTime(t), Replicas: n, Tier: w.tier}
	if count == 0 {
		// Nothing scraped yet: no pods in the sample.
		return s
	}
	size, _ := w.tier.Size()
	memory := size.Memory.AsApproximateFloat64() / 2
	for i := range n {
		cores := replica / count
		if i == 0 {
			cores = primary / count
		}
		cores = math.Max(0, cores*(1+w.cfg.World.CPUNoise*w.noise.NormFloat64()))
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
