package controllers

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// tierRestartSettings are the PostgreSQL settings a tier resized in place
// leaves waiting for a restart on purpose (see maxStepsWithoutRestart):
// they roll the pods only when spec.parameters sets them. MariaDB takes
// every setting of its tiers online.
var tierRestartSettings = []string{"shared_buffers", "max_connections"}

// parametersRestart is the pod template's AnnotationParametersRestart: the
// live template's, until a pod that runs it reports a setting waiting for
// a restart that is not the tier's; then the digest of the current
// spec.parameters, which rolls the pods, primary-safe, once for that
// digest. It is derived from the live StatefulSet, the pods and their
// reports alone, so a pass that follows one that wrote it renders the
// same: the roll is not undone while the pods still report the setting,
// nor started again once they stop. A pod still on a former digest is
// left out: the roll under way restarts it anyway, so an edit meanwhile
// that waits for no restart rolls nothing again.
func parametersRestart(db *dbpilotv1alpha1.Database, live *appsv1.StatefulSet, pods []corev1.Pod, reports map[string]layout.InstanceStatus) string {
	current := liveRestarts(live).Parameters
	if _, _, ok := desired.ParametersFile(db); !ok {
		return current
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Annotations[desired.AnnotationParametersRestart] != current {
			continue
		}
		for _, name := range reports[pod.Name].PendingRestart {
			if !tiersOwn(db, pod, name) {
				return desired.ParametersDigest(db)
			}
		}
	}
	return current
}

// tiersOwn reports whether a setting waits for a restart of the pod
// because a tier was resized in place, on purpose: one of
// tierRestartSettings that spec.parameters does not set, on a PostgreSQL
// pod resized in place (AnnotationStartedTier). Elsewhere it waits because
// spec.parameters changed or dropped it.
func tiersOwn(db *dbpilotv1alpha1.Database, pod *corev1.Pod, name string) bool {
	_, set := db.Spec.Parameters[name]
	_, resized := pod.Annotations[desired.AnnotationStartedTier]
	return db.Spec.Engine == dbpilotv1alpha1.EnginePostgres && !set && resized && slices.Contains(tierRestartSettings, name)
}
