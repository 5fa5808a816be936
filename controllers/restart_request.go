package controllers

import (
	appsv1 "k8s.io/api/apps/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// requestedRestart is the pod template's restart on request: the
// Database's AnnotationRestart while it has one, else the live template's,
// so that removing the annotation restarts nothing and the pods keep the
// value they last restarted for.
func requestedRestart(db *dbpilotv1alpha1.Database, live *appsv1.StatefulSet) string {
	if value := db.Annotations[dbpilotv1alpha1.AnnotationRestart]; value != "" {
		return value
	}
	return liveRestarts(live).Requested
}

// liveRestarts are the live template's restart annotations, the ones its
// hash was computed with (none with no StatefulSet yet).
func liveRestarts(live *appsv1.StatefulSet) desired.Restarts {
	if live == nil {
		return desired.Restarts{}
	}
	annotations := live.Spec.Template.Annotations
	return desired.Restarts{
		Parameters: annotations[desired.AnnotationParametersRestart],
		Requested:  annotations[dbpilotv1alpha1.AnnotationRestart],
	}
}

// restartOrder says in which order a roll of replicas pods restarts them.
func restartOrder(replicas int32) string {
	if replicas < 2 {
		return "the only pod at once: its clients wait while it starts again"
	}
	return "replicas first, the primary last, after a switchover where a replica can take over"
}
