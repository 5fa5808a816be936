package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// reconcileStatefulSet applies the StatefulSet. A new pod template rolls out
// replicas first: the partition holds the primary (ordinal 0) back until
// every replica runs the new template and is ready.
func (r *DatabaseReconciler) reconcileStatefulSet(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	if s.restoreProblem != "" {
		// No pod before the backup to restore is known.
		return ctrl.Result{}, nil
	}
	existing := &appsv1.StatefulSet{}
	owned, err := extractor(ctx, r.Client, db.Namespace, db.StatefulSetName(), existing, func() (*appsv1ac.StatefulSetApplyConfiguration, error) {
		return appsv1ac.ExtractStatefulSet(existing, FieldOwner)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	var live *appsv1.StatefulSet
	opts := desired.StatefulSetOptions{Images: r.images()}
	if owned != nil {
		live = existing
		opts.ClaimSize = claimTemplateSize(existing)
	}
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	problem, err := r.schedulingProblem(ctx, db)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != "" {
		// The StatefulSet keeps its pods and their template.
		s.schedulingProblem = problem
		if live != nil {
			s.replicas = ptr.Deref(live.Spec.Replicas, 1)
		}
		return ctrl.Result{RequeueAfter: schedulingPoll}, nil
	}
	if _, _, parameters := desired.ParametersFile(db); parameters && s.instances == nil {
		// Whether a setting of spec.parameters waits for a restart.
		s.instances = readInstances(ctx, s)
	}
	opts.Restarts = desired.Restarts{
		Parameters: parametersRestart(db, live, s.pods, s.instances),
		Requested:  requestedRestart(db, live),
	}
	hash := desired.TemplateHash(desired.PodTemplate(db, opts.Images, opts.Restarts))
	stuck := len(stuckPods(s.pods, r.clock().Now())) > 0
	opts.Replicas = rolloutReplicas(live, hash, db.EffectiveReplicas(), stuck)
	if d := s.designation; d != nil && int32(ordinalOf(d.Primary)) >= opts.Replicas {
		// Scaling down never removes the primary: its pod stays until a
		// switchover (switchOver) has moved the primary to a pod that
		// stays.
		opts.Replicas = int32(ordinalOf(d.Primary)) + 1
	}
	stopping := false
	if db.Spec.Hibernate {
		hold, err := r.hibernationHold(ctx, s, live)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.hibernationHold, stopping = hold, hold == ""
	}
	var resize resizePlan
	if !stopping {
		if resize, err = r.planResize(ctx, s, live, hash, opts.Restarts); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case stopping:
		// Every pod stops, the primary (ordinal 0) last; they start
		// again on the current template.
		opts.Stopped, opts.Replicas, opts.Partition = true, 0, 0
	case resize.since != "":
		// Every pod is held back; each is resized and relabelled.
		opts.ResizingInPlaceSince = resize.since
		opts.Partition = opts.Replicas
	case resize.done:
		opts.Partition = 0
	default:
		var handover int
		opts.Partition, handover = rolloutPartition(live, hash, opts.Replicas, r.primaryPlace(ctx, s))
		if handover != noHandover {
			s.rolloutHandover = db.PodName(handover)
		}
	}
	s.replicas = opts.Replicas
	sts := desired.StatefulSet(db, opts)
	wrote, err := applyIfChanged(ctx, r.Client, sts, owned)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("applying StatefulSet: %w", err)
	}
	if wrote {
		// Later phases read what this write changes. The apply answered
		// with the object as stored.
		s.observed = false
		s.statefulSetWritten = ptr.Deref(sts.Generation, 0)
		if live != nil && !resize.started {
			r.recordChanges(db, live, hash, opts.Replicas, opts.Restarts)
		}
	}
	if !wrote && live != nil {
		// The StatefulSet is as dbpilot wants it: a pod it holds from an
		// old template that never ran is replaced.
		if err := r.replaceOutdatedUnplacedPods(ctx, s, live); err != nil {
			return ctrl.Result{}, err
		}
		if r.InPlaceResize && resize.since == "" {
			// A resize asked for a tier taken back since is withdrawn.
			if err := r.withdrawResizes(ctx, s, live); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if resize.since != "" {
		// Pod events tell most steps; the deadline only time tells.
		return ctrl.Result{RequeueAfter: resizePoll}, nil
	}
	if opts.Replicas > db.EffectiveReplicas() {
		// Kept pods go when the rollout ends, which pod events announce,
		// or when it is stuck, which only time tells.
		return ctrl.Result{RequeueAfter: notReadyTooLong}, nil
	}
	return ctrl.Result{}, nil
}

// recordChanges records an Event for each user-visible change the applied
// StatefulSet (pod template hash templateHash, replicas pods, restarted
// for spec.parameters of digest restart) makes to the live one.
func (r *DatabaseReconciler) recordChanges(db *dbpilotv1alpha1.Database, live *appsv1.StatefulSet, templateHash string, replicas int32, restarts desired.Restarts) {
	before := ptr.Deref(live.Spec.Replicas, 1)
	switch {
	case replicas == 0:
		// Hibernating: the template a stopped Database takes changes
		// no pod.
		if before != 0 {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonHibernating, "Hibernate",
				"Stopping the %d pods, replicas first, the primary %s last; the volumes are kept", before, db.PodName(0))
		}
		return
	case before == 0:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonResuming, "Resume",
			"Starting %d pods again, the primary %s first", replicas, db.PodName(0))
		return
	case live.Spec.Replicas != nil && *live.Spec.Replicas != replicas:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonScaled, "Scale",
			"Scaling from %d to %d pods", *live.Spec.Replicas, replicas)
	case replicas != db.EffectiveReplicas() && live.Annotations[desired.AnnotationTemplateHash] != templateHash:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonScaled, "Scale",
			"Keeping %d pods until the new template has rolled out, then scaling to %d", replicas, db.EffectiveReplicas())
	}
	annotations := live.Spec.Template.Annotations
	if tier := annotations[desired.AnnotationTier]; tier != "" && tier != string(db.EffectiveTier()) {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
			"Changing tier from %s to %s, replicas first", tier, db.EffectiveTier())
	}
	if restarts.Parameters != "" && annotations[desired.AnnotationParametersRestart] != restarts.Parameters {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonRestartingForParameters, "RestartForParameters",
			"Restarting the pods, replicas first, the primary after a switchover: a setting of spec.parameters waits for a restart")
	}
	if restarts.Requested != "" && annotations[dbpilotv1alpha1.AnnotationRestart] != restarts.Requested {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonRestarting, "Restart",
			"Restarting the pods as %s asks, %s", dbpilotv1alpha1.AnnotationRestart, restartOrder(replicas))
	}
	if version := annotations[desired.AnnotationVersion]; version != "" && version != db.EngineVersion() {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonUpgraded, "Upgrade",
			"Upgrading %s from %s to %s, replicas first", db.Spec.Engine, version, db.EngineVersion())
	}
}

// claimTemplateSize is the storage request of the live claim template, which
// cannot change once the StatefulSet exists.
func claimTemplateSize(sts *appsv1.StatefulSet) resource.Quantity {
	for _, template := range sts.Spec.VolumeClaimTemplates {
		return template.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	return resource.Quantity{}
}

// rolloutReplicas decides the StatefulSet's replicas: want, except while a
// new template rolls out. Pods that a change makes unneeded (a bigger tier
// needs fewer of them) stay until every pod runs the new template and is
// ready, so capacity never dips below what the change aims for; then they
// go. More pods are added at once. A rollout that is stuck (a pod not ready
// for too long, say a bigger tier that does not fit) keeps nothing, so
// lowering the replicas still helps.
func rolloutReplicas(live *appsv1.StatefulSet, templateHash string, want int32, stuck bool) int32 {
	if live == nil || live.Spec.Replicas == nil || want >= *live.Spec.Replicas || stuck {
		return want
	}
	rollingOut := live.Annotations[desired.AnnotationTemplateHash] != templateHash ||
		live.Status.ObservedGeneration < live.Generation || updating(live.Status)
	if rollingOut {
		return *live.Spec.Replicas
	}
	return want
}

// primaryPlace is where the primary is, for planning a rollout: its
// ordinal, and whether dbpilot can hand it over to a replica (a failing-over
// engine whose primary answers as one; a world whose instances do not
// answer rolls by restart).
type primaryPlace struct {
	ordinal    int
	switchable bool
}

// noHandover is rolloutPartition's answer when the primary stays put.
const noHandover = -1

// rolloutPartition decides the StatefulSet's partition, and the ordinal the
// primary must be handed over to first (noHandover when none), so a new
// template never restarts the primary while it is one:
//   - no StatefulSet yet, or a single pod: 0;
//   - a new template (its hash differs from the live one): 1, so the pods
//     of ordinals 1..n-1 roll first; but when the primary is elsewhere and
//     can be handed over, no pod (partition n) until it is at ordinal 0;
//   - holding at n: 1 once the primary is at ordinal 0 (or cannot move);
//   - rolling with partition 1: once every other pod runs the new revision
//     and all are ready, the primary is handed over to ordinal 1, updated,
//     and then 0, so ordinal 0 rolls last, as a replica; a primary that
//     cannot move restarts last;
//   - otherwise: 0.
func rolloutPartition(live *appsv1.StatefulSet, templateHash string, replicas int32, primary primaryPlace) (int32, int) {
	if live == nil || replicas < 2 {
		return 0, noHandover
	}
	if live.Annotations[desired.AnnotationTemplateHash] != templateHash {
		if primary.switchable && primary.ordinal != 0 {
			return replicas, 0
		}
		return 1, noHandover
	}
	partition := int32(0)
	if live.Spec.UpdateStrategy.RollingUpdate != nil && live.Spec.UpdateStrategy.RollingUpdate.Partition != nil {
		partition = *live.Spec.UpdateStrategy.RollingUpdate.Partition
	}
	if partition == 0 {
		return 0, noHandover
	}
	status := live.Status
	if status.ObservedGeneration < live.Generation {
		// The StatefulSet controller has not seen the new template yet.
		return partition, noHandover
	}
	if partition > 1 {
		if primary.switchable && primary.ordinal != 0 {
			return partition, 0
		}
		return 1, noHandover
	}
	if status.UpdateRevision == status.CurrentRevision {
		return 0, noHandover
	}
	if status.UpdatedReplicas < replicas-1 || status.ReadyReplicas < replicas {
		return partition, noHandover
	}
	if primary.switchable && primary.ordinal == 0 {
		return partition, 1
	}
	return 0, noHandover
}
