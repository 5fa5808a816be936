package controllers

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
)

// unfenceGrace is how long an unfenced primary has to start its engine
// again before the failover delay counts.
const unfenceGrace = time.Minute

// fenced reports whether the dbpilot.io/fenced annotation fences a pod: the
// Database's names it (or is "*"), or the pod's own is "true".
func fenced(db *dbpilotv1alpha1.Database, pod *corev1.Pod) bool {
	if pod.Annotations[dbpilotv1alpha1.AnnotationFenced] == "true" {
		return true
	}
	names := strings.Split(db.Annotations[dbpilotv1alpha1.AnnotationFenced], ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return slices.Contains(names, "*") || slices.Contains(names, pod.Name)
}

// fencedNamed reports whether the pod of a name is fenced.
func fencedNamed(s *scope, name string) bool {
	pod := podNamed(s.pods, name)
	return pod != nil && fenced(s.db, pod)
}

// reconcileFencing asks the instance programs of fenced pods to stop their
// engine and keep it stopped, and those of pods no longer fenced that
// report themselves fenced to start it again. Failures are logged and
// tried again on the next pass.
func (r *DatabaseReconciler) reconcileFencing(ctx context.Context, s *scope) {
	log := logf.FromContext(ctx)
	var token string
	for i := range s.pods {
		pod := &s.pods[i]
		report, answers := s.instances[pod.Name]
		want := fenced(s.db, pod)
		if pod.Status.PodIP == "" || !answers || report.Fenced == want {
			continue
		}
		if token == "" {
			var err error
			if token, err = r.replicationPassword(ctx, s.db); err != nil {
				log.Error(err, "fencing")
				return
			}
		}
		path, reason, note := layout.UnfencePath, dbpilotv1alpha1.EventReasonUnfenced, "Unfenced %s: its engine starts again"
		if want {
			path, reason, note = layout.FencePath, dbpilotv1alpha1.EventReasonFenced, "Fenced %s: its engine is stopped and no Service reaches it; its data is kept"
		}
		if !want && s.designation != nil && pod.Name == s.designation.Primary {
			// The unfenced primary restarts its engine: the failover
			// delay counts from when it has had time to.
			restarted, err := designation.Restart(ctx, r.Client, *s.designation, r.clock().Now().Add(unfenceGrace))
			if err != nil {
				log.Error(err, "giving the unfenced primary time to start", "pod", pod.Name)
				continue
			}
			s.designation = &restarted
		}
		if err := postInstance(ctx, s.instanceTarget(pod), path, token, demoteTimeout, nil, nil); err != nil {
			log.Error(err, "changing an instance's fence", "pod", pod.Name, "fence", want)
			continue
		}
		r.Recorder.Eventf(s.db, nil, corev1.EventTypeNormal, reason, "Fence", note, pod.Name)
	}
}
