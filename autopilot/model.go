package autopilot

import (
	"math"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// Model is what the engine knows of how a Database spends CPU: the share of
// a write's cost each replica pays to replay it (streaming replication
// replays every write the primary makes, at a fraction of the cost of
// executing it). LearnModel fits it to the Database's history.
type Model struct {
	ReplayShare float64
}

// DefaultReplayShare is the replay share assumed until the history tells.
const DefaultReplayShare = 0.3

// Assumed is the model before anything is learnt.
var Assumed = Model{ReplayShare: DefaultReplayShare}

// saturated is the utilization above which a pod is taken as saturated: its
// measured CPU cannot show how much more it is being asked for.
const saturated = 0.97

// saturationHidden is how much bigger a load measured on saturated pods is
// taken to be: a pod at its CPU limit shows at most what it serves, not what
// it is asked for.
const saturationHidden = 4.0 / 3

// Unmasked returns load with the part that saturated pods of the sample hide
// scaled up by saturationHidden. Reads are measured on every pod: they are
// hidden only when a replica (or a lone primary) saturates. Writes are
// measured as the primary's excess over the replicas: they are hidden when
// the primary saturates.
func Unmasked(load Load, s Sample) Load {
	cores := cpuCores(s.Tier)
	var primary, replica, replicas bool
	for _, p := range s.Pods {
		full := p.CPUCores/cores >= saturated
		if p.Primary {
			primary = primary || full
			continue
		}
		replicas = true
		replica = replica || full
	}
	if primary {
		load.Write *= saturationHidden
	}
	if replica || (primary && !replicas) {
		load.Read *= saturationHidden
	}
	return load
}

// Load is a Database's demand in capacity units (a small pod serves 1):
// Write loads the primary fully and every replica at the replay share; Read
// spreads over the pods that serve it: its ReplicaOnly share over the
// replicas alone (reads sent to the -ro Service), the rest evenly over all
// pods.
type Load struct {
	Write, Read float64
	// ReplicaOnly is the share, 0 to 1, of Read that only replicas serve;
	// without replicas the primary serves it.
	ReplicaOnly float64
}

// Capacity is what one pod of the tier serves, in capacity units.
func Capacity(t dbpilotv1alpha1.Tier) float64 {
	size, ok := t.Size()
	if !ok {
		return 1
	}
	return float64(size.Capacity)
}

// cpuCores is the CPU one pod of the tier has.
func cpuCores(t dbpilotv1alpha1.Tier) float64 {
	size, ok := t.Size()
	if !ok {
		return 1
	}
	return size.CPU.AsApproximateFloat64()
}

// Utilizations are what a load does to the pods of a size.
type Utilizations struct {
	Primary, Replica float64
}

// Predict returns the utilization of the primary and of each replica when
// load runs on replicas pods of tier t.
func (m Model) Predict(load Load, replicas int32, t dbpilotv1alpha1.Tier) Utilizations {
	c := Capacity(t)
	if replicas <= 1 {
		return Utilizations{Primary: (load.Write + load.Read) / c}
	}
	n := float64(replicas)
	even := load.Read * (1 - load.ReplicaOnly) / n
	return Utilizations{
		Primary: (load.Write + even) / c,
		Replica: (m.ReplayShare*load.Write + even + load.Read*load.ReplicaOnly/(n-1)) / c,
	}
}

// EstimateLoad infers the write and read demand from one sample, given the
// size the Database ran at. With replicas, the engine's read rates tell how
// the reads split: the primary's read rate against a replica's is the share
// of a replica's reads that every pod serves alike, the rest only replicas
// serve (the -ro Service); the primary's utilization beyond its share of
// reads is the write load (with the rates unknown, reads are taken as
// spread evenly). Alone, the primary's load is split by the engine's read
// and write rates (all writes when they are unknown, the conservative case,
// since writes only a bigger tier can absorb).
func (m Model) EstimateLoad(s Sample) Load {
	c := Capacity(s.Tier)
	cores := cpuCores(s.Tier)
	var primary float64
	var replicaSum float64
	var replicas int
	var reads, writes, primaryReads, replicaReads float64
	for _, p := range s.Pods {
		u := p.CPUCores / cores
		reads += p.ReadRate
		if p.Primary {
			primary = u
			writes += p.WriteRate
			primaryReads += p.ReadRate
		} else {
			replicaSum += u
			replicaReads += p.ReadRate
			replicas++
		}
	}
	if replicas == 0 {
		total := primary * c
		writeShare := 1.0
		if reads+writes > 0 {
			writeShare = writes / (reads + writes)
		}
		return Load{Write: total * writeShare, Read: total * (1 - writeShare)}
	}
	n, k := float64(replicas+1), float64(replicas)
	replica := replicaSum / k
	// evenShare: of a replica's reads, the share the primary serves too.
	evenShare := 1.0
	if replicaReads > 0 {
		evenShare = math.Min(1, primaryReads/(replicaReads/k))
	}
	// The share is clamped as LearnModel clamps it, so the division
	// stays finite whatever Model it is called on.
	share := clampedShare(m.ReplayShare)
	write := math.Max(0, (primary-evenShare*replica)*c/(1-evenShare*share))
	perReplica := math.Max(0, replica*c-share*write)
	even, replicaOnly := evenShare*perReplica, (1-evenShare)*perReplica*k
	load := Load{Write: write, Read: even*n + replicaOnly}
	if load.Read > 0 {
		load.ReplicaOnly = replicaOnly / load.Read
	}
	return load
}

// Size is a number of pods and a tier.
type Size struct {
	Replicas int32
	Tier     dbpilotv1alpha1.Tier
}

// Cost is the capacity a size provisions: pods times tier capacity.
func (s Size) Cost() float64 { return float64(s.Replicas) * Capacity(s.Tier) }

// Ceiling is the utilization no single pod may pass for a target: 20 points
// above it, at most 95 %. The primary carries the writes on top of its
// share of the reads, so an average at target can hide a saturated primary;
// the HPA, which only sees the average, lets it saturate.
func Ceiling(target float64) float64 { return math.Min(0.95, target+0.2) }

// fits reports whether load runs on the size with the pods' average
// utilization within target (as the HPA measures it) and no pod above the
// target's ceiling.
func (m Model) fits(load Load, s Size, target float64) bool {
	u := m.Predict(load, s.Replicas, s.Tier)
	n := float64(max(1, s.Replicas))
	average := (u.Primary + (n-1)*u.Replica) / n
	ceiling := Ceiling(target)
	return average <= target && u.Primary <= ceiling && u.Replica <= ceiling
}

// Cheapest returns the size within the policy's bounds that runs load within
// target at the least cost; among equal costs, the one nearest current. When
// no size fits, it returns the size with the lowest peak utilization (the
// biggest the bounds allow) and false.
func (m Model) Cheapest(load Load, p Policy, current Size, target float64) (Size, bool) {
	var best Size
	found := false
	bestPeak := math.Inf(1)
	var fallback Size
	for t := p.MinTier.Index(); t <= p.MaxTier.Index(); t++ {
		tier := dbpilotv1alpha1.TierAt(t)
		for n := p.MinReplicas; n <= p.MaxReplicas; n++ {
			s := Size{Replicas: n, Tier: tier}
			u := m.Predict(load, n, tier)
			peak := math.Max(u.Primary, u.Replica)
			if peak < bestPeak-1e-9 || (math.Abs(peak-bestPeak) < 1e-9 && s.Cost() < fallback.Cost()) {
				bestPeak, fallback = peak, s
			}
			if !m.fits(load, s, target) {
				continue
			}
			if !found || s.Cost() < best.Cost()-1e-9 || (math.Abs(s.Cost()-best.Cost()) < 1e-9 && m.better(load, s, best, current)) {
				best, found = s, true
			}
		}
	}
	if !found {
		return fallback, false
	}
	return best, true
}

// better breaks a tie of cost between a and b: more headroom first (a write
// load is better served by one bigger primary than by replicas that each
// replay it), then fewer steps from the current size.
func (m Model) better(load Load, a, b, current Size) bool {
	ua, ub := m.Predict(load, a.Replicas, a.Tier), m.Predict(load, b.Replicas, b.Tier)
	pa, pb := math.Max(ua.Primary, ua.Replica), math.Max(ub.Primary, ub.Replica)
	if math.Abs(pa-pb) > 0.02 {
		return pa < pb
	}
	return distance(a, current) < distance(b, current)
}

// distance counts the steps between two sizes, tier steps weighing more
// since they restart every pod.
func distance(a, b Size) int {
	dr := int(a.Replicas - b.Replicas)
	dt := a.Tier.Index() - b.Tier.Index()
	return abs(dr) + 2*abs(dt)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
