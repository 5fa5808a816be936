package controllers

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"

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
// live template's, until a pod reports a setting waiting for a restart
// that is not the tier's; then the digest of the current spec.parameters,
// which rolls the pods, primary-safe, once for that digest. It is derived
// from the live StatefulSet and the reports alone, so a pass that follows
// one that wrote it renders the same: the roll is not undone while the
// pods still report the setting, nor started again once they stop.
func parametersRestart(db *dbpilotv1alpha1.Database, live *appsv1.StatefulSet, reports map[string]layout.InstanceStatus) string {
	current := ""
	if live != nil {
		current = live.Spec.Template.Annotations[desired.AnnotationParametersRestart]
	}
	if _, _, ok := desired.ParametersFile(db); !ok {
		return current
	}
	for _, report := range reports {
		for _, name := range report.PendingRestart {
			_, set := db.Spec.Parameters[name]
			tiers := db.Spec.Engine == dbpilotv1alpha1.EnginePostgres && slices.Contains(tierRestartSettings, name)
			if set || !tiers {
				return desired.ParametersDigest(db)
			}
		}
	}
	return current
}

// liveParametersRestart is the live template's
// AnnotationParametersRestart, the one its hash was computed with.
func liveParametersRestart(live *appsv1.StatefulSet) string {
	return live.Spec.Template.Annotations[desired.AnnotationParametersRestart]
}
