package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
)

// AutopilotFieldOwner is the field manager of status.autopilot and the
// auto-pilot's conditions.
const AutopilotFieldOwner = "dbpilot-autopilot"

// historyKept is how much metrics history the runner keeps per Database: the
// scale-down window, the first scale-down's longer window, and the anomaly
// baseline.
const historyKept = time.Hour

// MetricsSource is where the auto-pilot reads metrics: one batch per cycle
// for every Database.
type MetricsSource interface {
	Snapshot(ctx context.Context, at time.Time) (promsource.Snapshot, error)
}

// AutopilotRunner evaluates every Database with the auto-pilot on at a fixed
// interval and records its decision in status.autopilot. It never edits a
// spec: in Auto mode the Database reconciler applies the recommendation. It
// runs only on the elected leader.
type AutopilotRunner struct {
	Client client.Client
	// Source is nil when no Prometheus is configured; the auto-pilot then
	// reports it is not ready and holds.
	Source   MetricsSource
	Recorder events.EventRecorder
	// Interval is the time between cycles.
	Interval time.Duration
	// SettleTime is how long after a change the metrics still mix the old
	// size with the new: the source's rate window and a scrape.
	SettleTime time.Duration
	// FlapWindow is how long a scale-down waits after a scale-up; the
	// engine's default when zero.
	FlapWindow time.Duration
	// InPlaceResize: the reconciler resizes pods in place for a tier
	// change (the API server serves pods/resize).
	InPlaceResize bool
	// PlacementGrace is how long a pod a scale-up added may wait for a
	// node before the auto-pilot takes it back; placementGrace when zero.
	PlacementGrace time.Duration
	Clock          clock.WithTicker

	mu      sync.Mutex
	history map[types.NamespacedName][]autopilot.Sample
	last    map[types.NamespacedName]autopilot.LastChanges
	busy    map[types.NamespacedName]bool
	// placements and tierPlacements: the most pods, and the biggest
	// tier, each Database's pods were placed at.
	placements     map[types.NamespacedName]placement[int32]
	tierPlacements map[types.NamespacedName]placement[dbpilotv1alpha1.Tier]
}

// NeedLeaderElection makes the runner run on the leader only.
func (r *AutopilotRunner) NeedLeaderElection() bool { return true }

// Start runs a cycle every Interval until ctx ends.
func (r *AutopilotRunner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("autopilot")
	ctx = ctrl.LoggerInto(ctx, log)
	ticker := r.clock().NewTicker(r.Interval)
	defer ticker.Stop()
	for {
		if err := r.Cycle(ctx); err != nil {
			log.Error(err, "Auto-pilot cycle failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

func (r *AutopilotRunner) clock() clock.WithTicker {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Cycle evaluates every Database once: one metrics snapshot for all of them.
// A Database's own failure is logged with the Database and does not stop
// the others; the error is the cycle's.
func (r *AutopilotRunner) Cycle(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.history == nil {
		r.history = map[types.NamespacedName][]autopilot.Sample{}
		r.last = map[types.NamespacedName]autopilot.LastChanges{}
		r.busy = map[types.NamespacedName]bool{}
		r.placements = map[types.NamespacedName]placement[int32]{}
		r.tierPlacements = map[types.NamespacedName]placement[dbpilotv1alpha1.Tier]{}
	}
	dbs := &dbpilotv1alpha1.DatabaseList{}
	if err := r.Client.List(ctx, dbs); err != nil {
		return fmt.Errorf("listing Databases: %w", err)
	}
	r.forgetDeleted(dbs.Items)
	var active []*dbpilotv1alpha1.Database
	for i := range dbs.Items {
		db := &dbs.Items[i]
		if db.Spec.Autopilot == nil || db.Spec.Autopilot.Mode == dbpilotv1alpha1.AutopilotOff || !db.DeletionTimestamp.IsZero() {
			delete(r.history, client.ObjectKeyFromObject(db))
			if err := r.clear(ctx, db); err != nil {
				databaseLogger(ctx, db).Error(err, "Clearing the auto-pilot's status")
			}
			continue
		}
		active = append(active, db)
	}
	if len(active) == 0 {
		return nil
	}

	now := r.clock().Now()
	var snap promsource.Snapshot
	sourceErr := errors.New("no Prometheus is configured (--prometheus-url)")
	if r.Source != nil {
		snap, sourceErr = r.Source.Snapshot(ctx, now)
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingLabels{dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue}); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	podsOf := map[types.NamespacedName][]corev1.Pod{}
	for _, pod := range pods.Items {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[dbpilotv1alpha1.LabelDatabase]}
		podsOf[key] = append(podsOf[key], pod)
	}
	for _, db := range active {
		key := client.ObjectKeyFromObject(db)
		if sourceErr == nil && !db.Spec.Hibernate {
			// A hibernating Database has no pods to sample, and its
			// stop is no load to learn from.
			r.history[key] = trimHistory(append(r.history[key], sampleOf(db, podsOf[key], snap)), now)
		}
		policy := r.policyOf(ctx, db)
		policy.PlaceableReplicas = r.placeable(db, podsOf[key], now)
		policy.PlaceableTier = r.placeableTier(db, podsOf[key], now)
		in := autopilot.Input{
			Now:     now,
			Policy:  policy,
			Current: r.currentOf(db),
			Last:    r.lastOf(db, now),
			History: r.history[key],
		}
		d := autopilot.Decide(in)
		log := databaseLogger(ctx, db)
		if err := r.record(ctrl.LoggerInto(ctx, log), db, in, d, sourceErr); err != nil {
			log.Error(err, "Recording the auto-pilot's decision")
		}
	}
	return nil
}

// forgetDeleted drops what the runner keeps of Databases that no longer
// exist, so its state follows the fleet rather than grow with every
// Database ever made.
func (r *AutopilotRunner) forgetDeleted(dbs []dbpilotv1alpha1.Database) {
	exists := make(map[types.NamespacedName]bool, len(dbs))
	for i := range dbs {
		exists[client.ObjectKeyFromObject(&dbs[i])] = true
	}
	maps.DeleteFunc(r.history, func(key types.NamespacedName, _ []autopilot.Sample) bool { return !exists[key] })
	maps.DeleteFunc(r.last, func(key types.NamespacedName, _ autopilot.LastChanges) bool { return !exists[key] })
	maps.DeleteFunc(r.busy, func(key types.NamespacedName, _ bool) bool { return !exists[key] })
	maps.DeleteFunc(r.placements, func(key types.NamespacedName, _ placement[int32]) bool { return !exists[key] })
	maps.DeleteFunc(r.tierPlacements, func(key types.NamespacedName, _ placement[dbpilotv1alpha1.Tier]) bool { return !exists[key] })
}

// Following returns the Databases the runner keeps state for (metrics
// history, last changes), sorted: those with the auto-pilot on, and those
// whose auto-pilot was turned off, until they are deleted.
func (r *AutopilotRunner) Following() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := slices.Concat(slices.Collect(maps.Keys(r.history)), slices.Collect(maps.Keys(r.last)), slices.Collect(maps.Keys(r.busy)),
		slices.Collect(maps.Keys(r.placements)), slices.Collect(maps.Keys(r.tierPlacements)))
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(keys)
}

// databaseLogger is ctx's logger for one Database: every line names it.
func databaseLogger(ctx context.Context, db *dbpilotv1alpha1.Database) logr.Logger {
	return ctrl.LoggerFrom(ctx).WithValues("database", klog.KObj(db))
}

// sampleOf builds the Database's sample from the snapshot: its ready pods'
// metrics, with the primary marked by its role label.
func sampleOf(db *dbpilotv1alpha1.Database, pods []corev1.Pod, snap promsource.Snapshot) autopilot.Sample {
	tier := db.Status.Tier
	if tier == "" {
		tier = db.EffectiveTier()
	}
	s := autopilot.Sample{Time: snap.Time, Tier: tier}
	for i := range pods {
		pod := &pods[i]
		if !podReady(pod) || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		s.Replicas++
		m, ok := snap.Pods[promsource.PodKey{Namespace: pod.Namespace, Pod: pod.Name}]
		if !ok {
			continue
		}
		s.Pods = append(s.Pods, autopilot.PodSample{
			Pod: pod.Name, Primary: pod.Labels[dbpilotv1alpha1.LabelRole] == dbpilotv1alpha1.RolePrimary,
			CPUCores: m.CPUCores, MemoryBytes: m.MemoryBytes,
			Connections: m.Connections, MaxConnections: m.MaxConnections,
			ReadRate: m.ReadRate, WriteRate: m.WriteRate, LagSeconds: m.LagSeconds,
			VolumeUsedBytes: m.VolumeUsedShare, VolumeCapacityBytes: 1,
		})
	}
	return s
}

func trimHistory(history []autopilot.Sample, now time.Time) []autopilot.Sample {
	i := 0
	for i < len(history) && now.Sub(history[i].Time) > historyKept {
		i++
	}
	return history[i:]
}

// currentOf is the size the Database runs with, what keeps it busy, and
// whether a tier change goes without restarting its pods.
func (r *AutopilotRunner) currentOf(db *dbpilotv1alpha1.Database) autopilot.Current {
	current := currentOf(db)
	current.GrowsInPlace, current.ShrinksInPlace = resizesInPlace(db, r.InPlaceResize)
	return current
}

// resizesInPlace reports whether the reconciler changes db's tier up, and
// down, without restarting its pods, where the API server resizes pods in
// place: either way for MariaDB and MySQL. PostgreSQL grows one tier in
// place (shared_buffers waits for a restart) and rolls to a smaller tier;
// a second step up rolls too, so while any instance has settings pending a
// restart its growth is taken as a roll (the conservative reading: those
// settings may have been pending for another reason).
func resizesInPlace(db *dbpilotv1alpha1.Database, apiServerResizes bool) (grows, shrinks bool) {
	if !apiServerResizes {
		return false, false
	}
	if db.Spec.Engine != dbpilotv1alpha1.EnginePostgres {
		return true, true
	}
	for _, instance := range db.Status.Instances {
		if len(instance.PendingRestart) > 0 {
			return false, false
		}
	}
	return true, false
}

// currentOf is the size the Database runs with, and what keeps it busy.
func currentOf(db *dbpilotv1alpha1.Database) autopilot.Current {
	storage := db.EffectiveStorageSize()
	current := autopilot.Current{
		Replicas:       db.EffectiveReplicas(),
		Tier:           db.EffectiveTier(),
		StorageBytes:   storage.AsApproximateFloat64(),
		MaxConnections: db.EffectiveMaxConnections(),
	}
	current.Stopped = db.Spec.Hibernate
	switch {
	case db.Spec.Paused:
		current.Busy = "the Database to be unpaused"
	case db.Status.ObservedGeneration < db.Generation || meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing):
		current.Busy = "the rollout in progress"
	case db.Spec.Bootstrap != nil && db.Spec.Bootstrap.FromBackup != nil && !meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable):
		current.Busy = "the restore in progress"
	case db.Status.Backup != nil && db.Status.Backup.Running != "":
		current.Busy = "backup " + db.Status.Backup.Running
	}
	return current
}

// lastOf returns when the auto-pilot last changed this Database, from memory
// or, after a restart, from status.autopilot.lastDecision; and tracks when
// rollouts end, for the settle time.
func (r *AutopilotRunner) lastOf(db *dbpilotv1alpha1.Database, now time.Time) autopilot.LastChanges {
	key := client.ObjectKeyFromObject(db)
	last, known := r.last[key]
	if !known && db.Status.Autopilot != nil && db.Status.Autopilot.LastDecision != nil {
		decision := db.Status.Autopilot.LastDecision
		last.DirectionTime = decision.Time.Time
		switch autopilot.Action(decision.Action) {
		case autopilot.ActionScaleUp, autopilot.ActionTierUp, autopilot.ActionGrowStorage:
			last.Direction = 1
		case autopilot.ActionScaleDown, autopilot.ActionTierDown:
			last.Direction = -1
		}
		if decision.Action == string(autopilot.ActionTierUp) || decision.Action == string(autopilot.ActionTierDown) {
			last.Tier = decision.Time.Time
		}
	}
	busy := r.currentOf(db).Busy != ""
	if r.busy[key] && !busy {
		last.Settled = now
	}
	r.busy[key] = busy
	r.last[key] = last
	return last
}

// noteChange remembers a change of size the auto-pilot just applied.
func (r *AutopilotRunner) noteChange(db *dbpilotv1alpha1.Database, before, after autopilot.Size, now time.Time) {
	key := client.ObjectKeyFromObject(db)
	last := r.last[key]
	if after.Tier != before.Tier {
		last.Tier = now
	}
	last.Direction = autopilot.DirectionOf(before, after)
	last.DirectionTime = now
	r.last[key] = last
}
