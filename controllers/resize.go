package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

// A tier change resizes the running pods in place (the pods/resize
// subresource) where the API server serves it, instead of restarting each
// pod: the StatefulSet gets the new template with every pod held back by
// its partition, each pod is resized, and a pod whose new size the kubelet
// has applied is relabelled with the new revision, so the StatefulSet
// controller counts it updated and never recreates it. The engine follows
// the new configuration online. A resize the node cannot take (Infeasible),
// or one not done within resizeDeadline, falls back to the primary-safe
// roll.

// resizeDeadline is how long an in-place resize may take before the tier
// change rolls the pods instead.
const resizeDeadline = 2 * time.Minute

// atTier is db as it would be at tier t: its spec's tier, or the
// auto-pilot's recommendation when that is what decides the tier.
func atTier(db *dbpilotv1alpha1.Database, t dbpilotv1alpha1.Tier) *dbpilotv1alpha1.Database {
	c := db.DeepCopy()
	c.Spec.Tier = t
	if a := c.Status.Autopilot; a != nil && a.Recommendation != nil {
		a.Recommendation.Tier = t
	}
	return c
}

// inPlaceTierChange reports whether the live StatefulSet's pods can take
// db's template by a resize alone: the only change is the tier. PostgreSQL
// grows only (its shared_buffers, sized for the tier at start, would not
// fit a smaller pod); MariaDB and MySQL resize their buffer pool online
// both ways. restarts are the new template's restart annotations: a
// restart asked for with the tier change (for spec.parameters, or on
// request) rolls the pods.
func inPlaceTierChange(db *dbpilotv1alpha1.Database, live *appsv1.StatefulSet, images imagecatalog.Catalog, restarts desired.Restarts) (dbpilotv1alpha1.Tier, bool) {
	if live == nil {
		return "", false
	}
	from := dbpilotv1alpha1.Tier(live.Spec.Template.Annotations[desired.AnnotationTier])
	to := db.EffectiveTier()
	if from == "" || from == to || from.Index() < 0 {
		return "", false
	}
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres && from.Index() > to.Index() {
		return "", false
	}
	before := atTier(db, from)
	if before.EffectiveTier() != from {
		return "", false
	}
	return from, desired.TemplateHash(desired.PodTemplate(before, images, restarts)) == live.Annotations[desired.AnnotationTemplateHash]
}

// maxStepsWithoutRestart is how many tier steps above the tier its engine
// started with a PostgreSQL pod may be resized in place. One step doubles
// the pod's memory: shared_buffers is then half of what the new tier sets,
// the page cache takes the rest, and status lists the setting as pending a
// restart. A second step would leave it at a quarter, which matters: that
// change rolls the pods instead, primary-safe, and each engine restarts
// with the settings of its tier.
const maxStepsWithoutRestart = 1

// restartMatters reports whether moving db's pods to tier to must restart
// their engines rather than resize them: a PostgreSQL pod whose engine
// started more than maxStepsWithoutRestart tiers below to.
func restartMatters(db *dbpilotv1alpha1.Database, pods []corev1.Pod, to dbpilotv1alpha1.Tier) (dbpilotv1alpha1.Tier, bool) {
	if db.Spec.Engine != dbpilotv1alpha1.EnginePostgres {
		return "", false
	}
	for i := range pods {
		// A pod never resized started with the tier it was made for.
		started := dbpilotv1alpha1.Tier(pods[i].Annotations[desired.AnnotationStartedTier])
		if started == "" {
			started = dbpilotv1alpha1.Tier(pods[i].Annotations[desired.AnnotationTier])
		}
		if started.Index() >= 0 && to.Index()-started.Index() > maxStepsWithoutRestart {
			return started, true
		}
	}
	return "", false
}

// resizeState is where one pod stands in an in-place resize.
type resizeState int

const (
	// resizeToAsk: the pod's spec still has the old size.
	resizeToAsk resizeState = iota
	// resizeUnderway: asked; the kubelet has not applied it yet.
	resizeUnderway
	// resizeApplied: the container runs with the new size.
	resizeApplied
	// resizeInfeasible: the node can never give the new size.
	resizeInfeasible
)

// podResizeState reads the pod's resize of its database container to
// want (requests equal limits).
func podResizeState(pod *corev1.Pod, want corev1.ResourceList) resizeState {
	var spec *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == desired.DatabaseContainerName {
			spec = &pod.Spec.Containers[i]
		}
	}
	if spec == nil || !sameResources(spec.Resources.Limits, want) || !sameResources(spec.Resources.Requests, want) {
		return resizeToAsk
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch {
		case c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible:
			return resizeInfeasible
		case c.Type == corev1.PodResizePending, c.Type == corev1.PodResizeInProgress:
			return resizeUnderway
		}
	}
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == desired.DatabaseContainerName && status.Resources != nil &&
			sameResources(status.Resources.Limits, want) && sameResources(status.Resources.Requests, want) {
			return resizeApplied
		}
	}
	return resizeUnderway
}

// reportResources reports whether the kubelets of the pods report their
// containers' resources, without which a resize cannot be seen applied
// (a kubelet too old for in-place resize, or a simulated node).
func reportResources(pods []corev1.Pod) bool {
	for i := range pods {
		reported := false
		for _, status := range pods[i].Status.ContainerStatuses {
			reported = reported || (status.Name == desired.DatabaseContainerName && status.Resources != nil)
		}
		if !reported {
			return false
		}
	}
	return len(pods) > 0
}

// sameResources compares CPU and memory.
func sameResources(a, b corev1.ResourceList) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		x, y := a[name], b[name]
		if x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

// resizePoll is how often an in-place resize is looked at when nothing
// else wakes the reconciler.
const resizePoll = 5 * time.Second

// resizePlan is what the StatefulSet phase does about an in-place resize.
type resizePlan struct {
	// since is when the resize under way began (RFC 3339); empty when
	// none is.
	since string
	// started: this pass began it.
	started bool
	// done: this pass found every pod resized; the partition may go.
	done bool
}

// planResize starts, follows or ends an in-place resize of the pods for a
// new template whose hash is hash.
func (r *DatabaseReconciler) planResize(ctx context.Context, s *scope, live *appsv1.StatefulSet, hash string, restarts desired.Restarts) (resizePlan, error) {
	if !r.InPlaceResize || live == nil {
		return resizePlan{}, nil
	}
	db := s.db
	plan := resizePlan{since: live.Annotations[desired.AnnotationResizingInPlace]}
	if live.Annotations[desired.AnnotationTemplateHash] != hash {
		if plan.since != "" && podsRunTier(s.pods, db.EffectiveTier()) {
			// Taken back before any pod took the new size: nothing to
			// resize or roll (a resize asked is withdrawn).
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
				"The tier change is taken back before any pod was resized: the pods keep %s", db.EffectiveTier())
			return resizePlan{}, nil
		}
		// A new template: resized in place when only the tier changes
		// (again, when it changes during a resize), rolled otherwise.
		from, ok := inPlaceTierChange(db, live, r.images(), restarts)
		if started, matters := restartMatters(db, s.pods, db.EffectiveTier()); ok && matters {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
				"PostgreSQL's shared_buffers and max_connections are still sized for %s: rolling the pods to %s, primary-safe, instead of resizing them in place",
				started, db.EffectiveTier())
			ok = false
		}
		if !ok || !reportResources(s.pods) {
			if plan.since != "" {
				r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
					"The template changes beyond the tier: rolling the pods instead of resizing them in place")
			}
			return resizePlan{}, nil
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
			"Changing tier from %s to %s by resizing the pods in place", from, db.EffectiveTier())
		return resizePlan{since: r.clock().Now().UTC().Format(time.RFC3339), started: true}, nil
	}
	if plan.since == "" {
		return plan, nil
	}
	since, err := time.Parse(time.RFC3339, plan.since)
	if err != nil {
		since = time.Time{}
	}
	outcome, why, err := r.resizeInPlace(ctx, s, live, since)
	switch {
	case err != nil:
		return plan, err
	case outcome == resizeDone:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
			"Every pod resized in place to %s, none restarted", db.EffectiveTier())
		return resizePlan{done: true}, nil
	case outcome == resizeAbandoned && holdsLonePod(db, s.pods):
		held, err := r.holdRefusedResize(ctx, s, live, why)
		if err != nil {
			return plan, err
		}
		s.resizeHeld = held
		return plan, nil
	case outcome == resizeAbandoned:
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
			"Resizing in place failed (%s): rolling the pods to %s instead, replicas first", why, db.EffectiveTier())
		return resizePlan{}, nil
	}
	return plan, nil
}

// resizeOutcome is what a pass of an in-place resize found.
type resizeOutcome int

const (
	// resizeWaiting: pods are still being resized.
	resizeWaiting resizeOutcome = iota
	// resizeDone: every pod runs the new size under the new revision.
	resizeDone
	// resizeAbandoned: a pod cannot be resized in time; the pods roll.
	resizeAbandoned
)

// resizeInPlace takes the pods of an in-place tier change one step on:
// asks for each pod's new size, and relabels each pod whose new size is
// applied with the StatefulSet's new revision and the template's
// annotations. live must already have the new template.
func (r *DatabaseReconciler) resizeInPlace(ctx context.Context, s *scope, live *appsv1.StatefulSet, since time.Time) (resizeOutcome, string, error) {
	db := s.db
	if live.Status.ObservedGeneration < live.Generation || live.Status.UpdateRevision == "" {
		return resizeWaiting, "", nil
	}
	want := desired.DatabaseResources(db)
	template := desired.PodTemplate(db, r.images(), liveRestarts(live))
	revision := live.Status.UpdateRevision
	pending := 0
	for i := range s.pods {
		pod := &s.pods[i]
		if !pod.DeletionTimestamp.IsZero() || pod.Labels[appsv1.ControllerRevisionHashLabelKey] == revision {
			continue
		}
		pending++
		if pod.Annotations[desired.AnnotationResizeRefused] == string(db.EffectiveTier()) {
			// Refused and held already: not asked again every pass.
			return resizeAbandoned, fmt.Sprintf("pod %s was refused %s", pod.Name, db.EffectiveTier()), nil
		}
		switch podResizeState(pod, want) {
		case resizeInfeasible:
			return resizeAbandoned, fmt.Sprintf("pod %s cannot get %s on its node", pod.Name, db.EffectiveTier()), nil
		case resizeToAsk:
			err := askResize(ctx, r.Client, pod, want)
			if resizeRefused(err) {
				databaseLogger(ctx, db).Info("The API server refuses to resize a pod in place", "pod", pod.Name, "tier", db.EffectiveTier(), "error", err.Error())
				return resizeAbandoned, fmt.Sprintf("the API server refuses pod %s %s (%s)", pod.Name, db.EffectiveTier(), apierrors.ReasonForError(err)), nil
			}
			if err != nil {
				return resizeWaiting, "", fmt.Errorf("resizing pod %s: %w", pod.Name, err)
			}
		case resizeApplied:
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			if _, ok := pod.Annotations[desired.AnnotationStartedTier]; !ok {
				pod.Annotations[desired.AnnotationStartedTier] = pod.Annotations[desired.AnnotationTier]
			}
			for k, v := range template.Annotations {
				pod.Annotations[k] = v
			}
			delete(pod.Annotations, desired.AnnotationResizeRefused)
			if err := r.Client.Patch(ctx, pod, patch); err != nil {
				return resizeWaiting, "", fmt.Errorf("marking pod %s resized: %w", pod.Name, err)
			}
			pending--
		}
	}
	switch {
	case pending == 0:
		return resizeDone, "", nil
	case r.clock().Since(since) > resizeDeadline:
		return resizeAbandoned, fmt.Sprintf("%d pods not resized within %s", pending, resizeDeadline), nil
	}
	return resizeWaiting, "", nil
}

// askResize patches the database container's requests and limits through
// the pod's resize subresource (a strategic merge: a JSON merge patch would
// replace the whole container list).
func askResize(ctx context.Context, c client.Client, pod *corev1.Pod, want corev1.ResourceList) error {
	resources := map[string]string{}
	for name, q := range want {
		resources[string(name)] = q.String()
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name":      desired.DatabaseContainerName,
		"resources": map[string]any{"requests": resources, "limits": resources},
	}}}})
	if err != nil {
		return err
	}
	return c.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
}
