package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// An in-place resize can be refused: the API server refuses more than the
// node has, the kubelet more than is free (Deferred, past resizeDeadline)
// or more than it can ever give (Infeasible). A refused resize otherwise
// rolls the pods, replicas first, the primary after a switchover. A lone
// pod has nothing to switch over to: rolling it stops the Database, and
// the node that refused the size would most likely not take the
// recreated pod either. When that tier is the auto-pilot's, which the
// owner did not ask for, the pod is not restarted: it runs on at its tier,
// marked with the tier refused, and the auto-pilot, which reads the mark,
// takes its tier back. The owner's own tier change rolls it as asked.

// resizeRefused reports whether the API server refused an in-place resize
// for good (not a conflict, a timeout or an outage, which pass).
func resizeRefused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// holdsLonePod reports whether a refused resize of db's pods holds rather
// than rolls them: one pod runs, at a smaller tier than the one asked for,
// which is the auto-pilot's. (A smaller tier refused rolls: the tier the
// pod keeps is then the bigger one, which nothing would take back.)
func holdsLonePod(db *dbpilotv1alpha1.Database, pods []corev1.Pod) bool {
	var running []*corev1.Pod
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			running = append(running, &pods[i])
		}
	}
	if len(running) != 1 || db.EffectiveReplicas() != 1 || db.EffectiveTier() == db.SpecTier() {
		return false
	}
	return dbpilotv1alpha1.Tier(running[0].Annotations[desired.AnnotationTier]).Index() < db.EffectiveTier().Index()
}

// podsRunTier reports whether every pod runs tier.
func podsRunTier(pods []corev1.Pod, tier dbpilotv1alpha1.Tier) bool {
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() && dbpilotv1alpha1.Tier(pods[i].Annotations[desired.AnnotationTier]) != tier {
			return false
		}
	}
	return len(pods) > 0
}

// holdRefusedResize marks the pods a refused resize left at their tier
// with the tier refused, with a Warning the first time, and says why the
// Database keeps them as they are.
func (r *DatabaseReconciler) holdRefusedResize(ctx context.Context, s *scope, live *appsv1.StatefulSet, why string) (string, error) {
	db := s.db
	tier := string(db.EffectiveTier())
	for i := range s.pods {
		pod := &s.pods[i]
		if !pod.DeletionTimestamp.IsZero() || pod.Labels[appsv1.ControllerRevisionHashLabelKey] == live.Status.UpdateRevision ||
			pod.Annotations[desired.AnnotationResizeRefused] == tier {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[desired.AnnotationResizeRefused] = tier
		if err := r.Client.Patch(ctx, pod, patch); err != nil {
			return "", fmt.Errorf("marking pod %s's resize refused: %w", pod.Name, err)
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonTierChanged, "ChangeTier",
			"Resizing pod %s in place to %s failed (%s): a lone pod is not restarted for the auto-pilot's tier; it runs on at %s until the auto-pilot takes the tier back",
			pod.Name, tier, why, pod.Annotations[desired.AnnotationTier])
	}
	// The why is the Event's: the next pass does not ask again, and says
	// less.
	return fmt.Sprintf("resizing in place to %s was refused: the lone pod runs on at its tier until the auto-pilot takes it back", tier), nil
}

// resizesToWithdraw are the pods whose database container asks for
// another size than want, the template's, though they run the StatefulSet's
// update revision: a resize asked for a tier taken back since. None until
// the StatefulSet controller has seen live's last change.
func resizesToWithdraw(live *appsv1.StatefulSet, pods []corev1.Pod, want corev1.ResourceList) []*corev1.Pod {
	if live == nil || live.Status.ObservedGeneration < live.Generation || live.Status.UpdateRevision == "" {
		return nil
	}
	var withdraw []*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != live.Status.UpdateRevision {
			continue
		}
		if _, marked := pod.Annotations[desired.AnnotationResizeRefused]; marked || podResizeState(pod, want) == resizeToAsk {
			withdraw = append(withdraw, pod)
		}
	}
	return withdraw
}

// withdrawResizes asks each pod resizesToWithdraw names for the template's
// size again, and drops its refusal mark. A withdrawal the API server
// refuses (Kubernetes 1.33 refuses to lower a memory limit in place) is
// logged and left: the pod runs at its tier all the same.
func (r *DatabaseReconciler) withdrawResizes(ctx context.Context, s *scope, live *appsv1.StatefulSet) error {
	want := desired.DatabaseResources(s.db)
	log := databaseLogger(ctx, s.db)
	for _, pod := range resizesToWithdraw(live, s.pods, want) {
		if podResizeState(pod, want) == resizeToAsk {
			err := askResize(ctx, r.Client, pod, want)
			switch {
			case resizeRefused(err):
				log.Info("The API server refuses to withdraw a resize taken back", "pod", pod.Name, "tier", s.db.EffectiveTier(), "error", err.Error())
			case err != nil:
				return fmt.Errorf("asking pod %s for its template's size again: %w", pod.Name, err)
			default:
				log.Info("Withdrew a resize taken back", "pod", pod.Name, "tier", s.db.EffectiveTier())
			}
		}
		if _, marked := pod.Annotations[desired.AnnotationResizeRefused]; marked {
			patch := client.MergeFrom(pod.DeepCopy())
			delete(pod.Annotations, desired.AnnotationResizeRefused)
			if err := r.Client.Patch(ctx, pod, patch); err != nil {
				return fmt.Errorf("dropping pod %s's resize refusal: %w", pod.Name, err)
			}
		}
	}
	return nil
}
