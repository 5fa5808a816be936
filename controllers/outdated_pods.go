package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// A pod the scheduler never placed never ran: no data of the Database is
// in it, and its volume stays whatever becomes of it. When the StatefulSet's
// template moves on while such a pod waits for a node (a bigger tier that
// fits no node, taken back), the StatefulSet controller never replaces it:
// with ordered pod management it changes nothing while a pod is not ready,
// and it recreates a pod of an old revision only once that pod is ready.
// dbpilot deletes such a pod; the StatefulSet controller makes it again
// from the template it has now.

// outdatedUnplacedPods are live's pods that the scheduler refused to place
// (and nominated no node for) and whose revision is not the one the
// StatefulSet controller makes them from now: the current revision below
// the partition, the update revision from it on. None until the controller
// has seen live's last change.
func outdatedUnplacedPods(live *appsv1.StatefulSet, pods []corev1.Pod) []*corev1.Pod {
	if live == nil || live.Status.ObservedGeneration < live.Generation || live.Status.UpdateRevision == "" {
		return nil
	}
	partition := int32(0)
	if u := live.Spec.UpdateStrategy.RollingUpdate; u != nil && u.Partition != nil {
		partition = *u.Partition
	}
	var outdated []*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() || pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" {
			// Bound, or about to be: the scheduler has preempted pods
			// for it, whose eviction its deletion would waste.
			continue
		}
		if _, refused := schedulerRefusal(pod); !refused {
			continue
		}
		want := live.Status.UpdateRevision
		if int32(ordinalOf(pod.Name)) < partition && live.Status.CurrentRevision != "" {
			want = live.Status.CurrentRevision
		}
		if pod.Labels[appsv1.ControllerRevisionHashLabelKey] != want {
			outdated = append(outdated, pod)
		}
	}
	return outdated
}

// replaceOutdatedUnplacedPods deletes the pods outdatedUnplacedPods names,
// each only as last read: a pod bound to a node since is left alone.
func (r *DatabaseReconciler) replaceOutdatedUnplacedPods(ctx context.Context, s *scope, live *appsv1.StatefulSet) error {
	for _, pod := range outdatedUnplacedPods(live, s.pods) {
		uid, version := pod.UID, pod.ResourceVersion
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid, ResourceVersion: &version})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue
		case err != nil:
			return fmt.Errorf("deleting pod %s, which never ran, for its current template: %w", pod.Name, err)
		}
		then := "so the StatefulSet makes it again from the current one"
		if int32(ordinalOf(pod.Name)) >= ptr.Deref(live.Spec.Replicas, 1) {
			then = "the StatefulSet keeps no pod of its ordinal now"
		}
		r.Recorder.Eventf(s.db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonPodReplaced, "ReplacePod",
			"Pod %s never ran (no node took it) and its template has changed since: deleted; %s", pod.Name, then)
		databaseLogger(ctx, s.db).Info("Replaced a pod that never ran and whose template changed", "pod", pod.Name)
	}
	return nil
}
