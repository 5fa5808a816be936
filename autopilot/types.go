package autopilot

import (
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// PodSample is what the metrics say about one pod at one time. Rates are per
// second over the source's rate window.
type PodSample struct {
	// Pod is the pod's name.
	Pod string
	// Primary is true for the pod that takes writes.
	Primary bool
	// CPUCores is the CPU the database container uses.
	CPUCores float64
	// MemoryBytes is the container's working set.
	MemoryBytes float64
	// Connections and MaxConnections are the engine's connection count and limit.
	Connections, MaxConnections float64
	// ReadRate and WriteRate are the engine's read and write operations.
	ReadRate, WriteRate float64
	// LagSeconds is the replication lag of a replica.
	LagSeconds float64
	// VolumeUsedBytes and VolumeCapacityBytes describe the pod's data volume.
	VolumeUsedBytes, VolumeCapacityBytes float64
}

// Sample is one evaluation's metrics of a Database.
type Sample struct {
	// Time is when the metrics were taken.
	Time time.Time
	// Replicas and Tier are the Database's size when they were taken.
	Replicas int32
	Tier     dbpilotv1alpha1.Tier
	// Pods are the pods the metrics cover.
	Pods []PodSample
}

// Policy is the owner's policy, from spec.autopilot, with defaults applied.
type Policy struct {
	MinReplicas, MaxReplicas int32
	MinTier, MaxTier         dbpilotv1alpha1.Tier
	// CPUTarget, MemoryTarget and ConnectionTarget are utilizations in (0, 1].
	CPUTarget, MemoryTarget, ConnectionTarget float64
	ScaleUpStabilization                      time.Duration
	ScaleDownStabilization                    time.Duration
	TierCooldown                              time.Duration
	// FlapWindow is how long a scale-down waits after a scale-up (and a
	// first scale-down after the auto-pilot starts), and how far ahead the
	// load's trend must fit a smaller size; DefaultFlapWindow when zero.
	FlapWindow time.Duration
	// SettleTime is how long after a change the metrics still mix the old
	// size with the new (the rate window plus a scrape); no decision is made
	// on them.
	SettleTime time.Duration
	// StorageThreshold and StorageStep are fractions; StorageMaxBytes 0
	// disables storage growth.
	StorageThreshold, StorageStep float64
	StorageMaxBytes               float64
	// StorageExpandable is whether the volumes' StorageClass allows expansion.
	StorageExpandable bool
	// PlaceableReplicas is the most pods the cluster has been seen to
	// place: a scale-up left pods the scheduler could not place (no node
	// fits them, or a required anti-affinity leaves none free). Zero when
	// nothing is known to limit it. The auto-pilot goes back to it and
	// grows the tier rather than add pods the cluster cannot place.
	PlaceableReplicas int32
	// PlaceableTier is the biggest tier the cluster has been seen to place
	// the pods at: a tier change left pods of a bigger one that no node
	// has the CPU or memory for. Empty when nothing is known to limit it.
	// The auto-pilot goes back to it and adds pods rather than grow the
	// tier beyond it.
	PlaceableTier dbpilotv1alpha1.Tier
}

func (p Policy) flapWindow() time.Duration {
	if p.FlapWindow <= 0 {
		return DefaultFlapWindow
	}
	return p.FlapWindow
}

// Current is the Database's size now and whether it may be changed.
type Current struct {
	Replicas     int32
	Tier         dbpilotv1alpha1.Tier
	StorageBytes float64
	// MaxConnections is the engine's connection limit now.
	MaxConnections int32
	// Busy names what is in progress (rollout, backup, restore, upgrade);
	// empty when nothing is.
	Busy string
	// Stopped: no pod runs on purpose (the Database hibernates), so there
	// is nothing to measure and no size to change.
	Stopped bool
	// GrowsInPlace: a tier up resizes the running pods without restarting
	// them; ShrinksInPlace: so does a tier down. Otherwise the change
	// restarts each pod, and a lone pod's restart leaves the Database
	// without writes (or reads) meanwhile.
	GrowsInPlace, ShrinksInPlace bool
}

// LastChanges are when the auto-pilot last changed each dimension, from its
// status, so cooldowns survive an operator restart.
type LastChanges struct {
	ReplicasUp, ReplicasDown, Tier time.Time
	// Direction is +1 after the last upward change, -1 after a downward one.
	Direction int
	// DirectionTime is when Direction was set.
	DirectionTime time.Time
	// Settled is when the last change finished rolling out (zero while
	// unknown); the metrics settle for Policy.SettleTime after it.
	Settled time.Time
}

// DirectionOf is the Direction a change of size sets: down when it costs
// less, or as much with a smaller tier (a lone pod's tier down comes with a
// replica of the smaller tier, for the primary to switch over to); up
// otherwise.
func DirectionOf(before, after Size) int {
	if after.Cost() < before.Cost() || (after.Cost() == before.Cost() && after.Tier.Index() < before.Tier.Index()) {
		return -1
	}
	return 1
}

// Input is everything one decision is made from.
type Input struct {
	Now     time.Time
	Policy  Policy
	Current Current
	Last    LastChanges
	// History holds this Database's samples, oldest first, newest last.
	// Samples are taken every evaluation interval; a missing evaluation is a
	// gap. It should cover the scale-down stabilization window.
	History []Sample
}

// Action is what a decision does.
type Action string

// The actions.
const (
	ActionHold        Action = "Hold"
	ActionScaleUp     Action = "ScaleUp"
	ActionScaleDown   Action = "ScaleDown"
	ActionTierUp      Action = "TierUp"
	ActionTierDown    Action = "TierDown"
	ActionGrowStorage Action = "GrowStorage"
	// ActionRaiseConnections raises max_connections within the tier's limit.
	ActionRaiseConnections Action = "RaiseConnections"
)

// Reasons of decisions, machine-readable.
const (
	ReasonMetricsMissing    = "MetricsMissing"
	ReasonMetricsStale      = "MetricsStale"
	ReasonMetricsIncomplete = "MetricsIncomplete"
	ReasonBusy              = "Busy"
	ReasonWritePressure     = "WritePressure"
	ReasonReadPressure      = "ReadPressure"
	ReasonConnections       = "ConnectionPressure"
	ReasonMemory            = "MemoryPressure"
	ReasonPredicted         = "PredictedSaturation"
	ReasonOverProvisioned   = "OverProvisioned"
	ReasonWithinTargets     = "WithinTargets"
	ReasonStabilizing       = "Stabilizing"
	ReasonSettling          = "Settling"
	ReasonCooldown          = "Cooldown"
	ReasonAtBounds          = "AtBounds"
	ReasonStorageThreshold  = "StorageThreshold"
	ReasonStorageFixed      = "StorageNotExpandable"
	// ReasonUnschedulable: pods a scale-up added, or pods of the tier a
	// tier change moved to, cannot be scheduled.
	ReasonUnschedulable = "Unschedulable"
	// ReasonStopped: no pod runs (the Database hibernates).
	ReasonStopped = "Stopped"
)

// Decision is the auto-pilot's verdict for one Database at one time.
type Decision struct {
	// Action is the main change; Hold when nothing changes.
	Action Action
	// Replicas, Tier and StorageBytes are the recommended size; equal to the
	// current size in a hold.
	Replicas     int32
	Tier         dbpilotv1alpha1.Tier
	StorageBytes float64
	// MaxConnections is the recommended connection limit; zero for the
	// tier's own.
	MaxConnections int32
	// Reason is machine-readable; Message explains it with the numbers.
	Reason  string
	Message string
	// Signals are the numbers the decision was made on.
	Signals map[string]float64
	// MetricsReady is false when the metrics were missing, stale or partial.
	MetricsReady bool
	// NextEligible is the earliest time a held change may happen.
	NextEligible time.Time
	// Anomalies describe unusual throughput or connections; they do not
	// change the size by themselves.
	Anomalies []string
}

// TakesBack reports whether the decision takes back pods or a tier the
// cluster cannot place: a change made on no metrics.
func (d Decision) TakesBack() bool {
	return d.Reason == ReasonUnschedulable && d.Action != ActionHold
}

// Changed reports whether the decision changes the size.
func (d Decision) Changed(c Current) bool {
	return d.Replicas != c.Replicas || d.Tier != c.Tier || d.StorageBytes > c.StorageBytes ||
		(d.MaxConnections != 0 && d.MaxConnections != c.MaxConnections)
}

// Waits reports whether the decision is a hold that defers a judgement
// (for a breach to last, the metrics to settle, a cooldown, or a rollout)
// rather than one that finds the current size right. Such a hold does not
// replace a standing recommendation: in Recommend mode the current size is
// the spec's, so it would flip the recommendation back to the spec and,
// once the wait is over, to the same change again.
func (d Decision) Waits() bool {
	if d.Action != ActionHold {
		return false
	}
	switch d.Reason {
	case ReasonStabilizing, ReasonSettling, ReasonCooldown, ReasonBusy, ReasonStopped:
		return true
	}
	return false
}
