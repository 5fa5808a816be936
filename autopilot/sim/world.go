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
	// FlapWindow: a change of direction within it is a flap.
	FlapWindow time.Duration
}

// DefaultConfig is the default world and a 15 s sync.
func DefaultConfig() Config {
	return ConfigFor(DefaultWorld())
}

// ConfigFor is DefaultConfig in world w.
func ConfigFor(w World) Config {
	return Config{World: w, Interval: 15 * time.Second, FlapWindow: 10 * time.Minute}
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

// world is the simulated database: pods that serve once cloned or
// restarted, and a tier every pod reaches by a roll (a restart per pod) or,
// where the world allows it, by an in-place resize. Its physics is its own
// code: the engine judged here learns it only from the metrics.
type world struct {
	cfg Config
	// pods[0] is the primary.
	pods []pod
	// tier is the declared tier, which every pod runs once rolled.
	tier dbpilotv1alpha1.Tier
	// inPlace: the tier change under way resizes the pods in place.
	inPlace bool
	// shedTo is how many pods remain once the tier change has rolled out:
	// a resize to a new tier and fewer pods keeps them all until then.
	shedTo int32
	// switchFirst: a roll moves the primary to a rolled replica before it
	// restarts the primary (dbpilot's operator); without it the primary is
	// restarted in place (VPA's updater).
	switchFirst bool
	// writesDown is how long writes were unavailable; restarts,
	// switchovers, unswitched and lone count the roll's events (lone: the
	// only pod restarted).
	writesDown                              float64
	restarts, switchovers, unswitched, lone int
	// truth records each step's true CPU demand, for delayed metrics.
	truth []truthPoint
	noise *rand.Rand
}

// pod is one pod of the simulated database.
type pod struct {
	// servesAt is when the pod serves, after a clone or a restart.
	servesAt float64
	tier     dbpilotv1alpha1.Tier
	// resizeAt is when an in-place resize to the declared tier lands (0:
	// none pending).
	resizeAt float64
}

type truthPoint struct {
	at       float64
	replicas int32
	// primary and replica are the CPU cores the primary and each replica
	// are asked for, which may be more than they have: primaryCores and
	// replicaCores.
	primary, replica           float64
	primaryCores, replicaCores float64
	load                       autopilot.Load
	// served is the part of load the pods serve: all of it unless a pod
	// is asked for more CPU than it has, which serves that much less.
	served autopilot.Load
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
// replicas alone, the rest spread over every pod. Without a serving primary
// writes are not served, and the replicas serve every read.
func (w *world) cpuDemand(load autopilot.Load, n int32, primaryServes bool) (primary, replica float64) {
	switch {
	case n == 0:
		return 0, 0
	case !primaryServes:
		return 0, unitCores * load.Read / float64(n)
	case n == 1:
		return unitCores * (load.Write + load.Read), 0
	}
	spread := load.Read * (1 - load.ReplicaOnly) / float64(n)
	primary = unitCores * (load.Write + spread)
	replica = unitCores * (w.cfg.World.ReplicaWriteShare*load.Write + spread + load.Read*load.ReplicaOnly/float64(n-1))
	return primary, replica
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, tier: StartTier, switchFirst: true, noise: rand.New(rand.NewPCG(cfg.World.Seed, 0x5eed))}
	for range StartReplicas {
		w.pods = append(w.pods, pod{tier: StartTier})
	}
	return w
}

// ready is the number of pods serving at time t.
func (w *world) ready(t float64) int32 {
	var n int32
	for _, p := range w.pods {
		if p.servesAt <= t {
			n++
		}
	}
	return n
}

func (w *world) provisioned() int32 { return int32(len(w.pods)) }

// servingUnits is what the pods serving at t serve flat out, in trace units.
func (w *world) servingUnits(t float64) float64 {
	var total float64
	for _, p := range w.pods {
		if p.servesAt <= t {
			total += units(1, p.tier)
		}
	}
	return total
}

// rolled reports whether every pod runs the declared tier.
func (w *world) rolled() bool {
	for _, p := range w.pods {
		if p.tier != w.tier {
			return false
		}
	}
	return true
}

// busy reports whether a clone, a restart, a roll or a resize is in
// progress at t.
func (w *world) busy(t float64) bool {
	return w.ready(t) < w.provisioned() || !w.rolled()
}

// resize moves towards replicas pods of tier: new pods serve after the clone
// time, removed pods go at once (newest first, never the primary) unless a
// tier change is under way, which they wait for; a new tier is resized in
// place where the world allows it, or rolled.
func (w *world) resize(t float64, replicas int32, tier dbpilotv1alpha1.Tier) {
	if tier != w.tier {
		w.inPlace = w.cfg.World.InPlaceResize && (!w.cfg.World.InPlaceGrowOnly || tier.Index() > w.tier.Index())
		w.tier = tier
		for i := range w.pods {
			w.pods[i].resizeAt = 0
			if w.inPlace && w.pods[i].tier != tier {
				w.pods[i].resizeAt = t + w.cfg.World.ResizeSeconds
			}
		}
	}
	for w.provisioned() < replicas {
		w.pods = append(w.pods, pod{servesAt: t + w.cfg.World.CloneSeconds, tier: w.tier})
	}
	w.shedTo = 0
	if w.provisioned() > replicas {
		if !w.rolled() {
			w.shedTo = max(1, replicas)
			return
		}
		w.pods = w.pods[:max(1, replicas)]
	}
}

// size is the number of pods and the tier the world is heading for.
func (w *world) size() autopilot.Size {
	n := w.provisioned()
	if w.shedTo > 0 {
		n = w.shedTo
	}
	return autopilot.Size{Replicas: n, Tier: w.tier}
}

// advance lands due in-place resizes and restarts the next pod of a roll:
// one pod at a time, each once every pod serves again; replicas first,
// newest first; then the primary, which moves to a rolled replica first
// (a switchover) when there is one and the roll switches first.
func (w *world) advance(t float64) {
	for i := range w.pods {
		if p := &w.pods[i]; p.resizeAt > 0 && t >= p.resizeAt {
			p.tier, p.resizeAt = w.tier, 0
		}
	}
	if w.inPlace || w.rolled() || w.ready(t) < w.provisioned() {
		return
	}
	for i := len(w.pods) - 1; i > 0; i-- {
		if w.pods[i].tier != w.tier {
			w.restart(t, i)
			return
		}
	}
	if len(w.pods) == 1 {
		w.restart(t, 0)
		w.lone++
		w.writesDown += w.cfg.World.RestartSeconds
		return
	}
	if w.switchFirst {
		w.pods[0], w.pods[1] = w.pods[1], w.pods[0]
		w.switchovers++
		w.writesDown += w.cfg.World.SwitchoverSeconds
		w.restart(t, 1)
		return
	}
	w.restart(t, 0)
	w.unswitched++
	w.writesDown += w.cfg.World.RestartSeconds
}

func (w *world) restart(t float64, i int) {
	w.pods[i].servesAt, w.pods[i].tier = t+w.cfg.World.RestartSeconds, w.tier
	w.restarts++
}

// step advances to time t under load, recording truth, and returns the
// overloaded pod-seconds and the cost of the interval dt: every pod that
// exists is paid for at its own tier, and only serving pods serve.
func (w *world) step(t, dt float64, load autopilot.Load) (overload, cost float64) {
	w.advance(t)
	if w.shedTo > 0 && w.rolled() {
		w.pods, w.shedTo = w.pods[:w.shedTo], 0
	}
	n := w.ready(t)
	primaryServes := w.pods[0].servesAt <= t
	primary, replica := w.cpuDemand(load, n, primaryServes)
	point := truthPoint{at: t, replicas: n, primary: primary, replica: replica, load: load}
	for i, p := range w.pods {
		cost += units(1, p.tier) * dt
		if p.servesAt > t {
			continue
		}
		cores, demand := podCores(p.tier), replica
		if i == 0 {
			demand, point.primaryCores = primary, cores
		} else if point.replicaCores == 0 || cores < point.replicaCores {
			point.replicaCores = cores
		}
		if demand > cores {
			overload += dt
		}
	}
	point.served = servedLoad(load, n, primaryServes, point)
	w.truth = append(w.truth, point)
	return overload, cost
}

// servedLoad is the part of load that the n serving pods of p serve when
// each serves what it is asked for in proportion to the CPU it has: a
// saturated database's throughput is capped, and so are the rates it
// reports.
func servedLoad(load autopilot.Load, n int32, primaryServes bool, p truthPoint) autopilot.Load {
	share := func(have, asked float64) float64 {
		if asked <= have {
			return 1
		}
		return have / asked
	}
	fp, fr := share(p.primaryCores, p.primary), share(p.replicaCores, p.replica)
	switch {
	case n == 0:
		return autopilot.Load{}
	case !primaryServes:
		return autopilot.Load{Read: load.Read * fr}
	case n == 1:
		return autopilot.Load{Write: load.Write * fp, Read: load.Read * fp}
	}
	spread := load.Read * (1 - load.ReplicaOnly) / float64(n)
	return autopilot.Load{Write: load.Write * fp, Read: spread*fp + (load.Read-spread)*fr}
}

// observe returns the metrics a controller reads at time t: CPU averaged
// over the rate window and delayed by the scrape, capped at what the pod has
// (a saturated pod cannot show how much more it is asked for), with the
// world's measurement noise, and the rates of what the pods served (exact,
// as query counters are), as a sample of the size the database has at t.
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
		// Each pod is capped at the cores it had then.
		primary += math.Min(p.primaryCores, p.primary)
		replica += math.Min(p.replicaCores, p.replica)
		reads += p.served.Read
		writes += p.served.Write
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
