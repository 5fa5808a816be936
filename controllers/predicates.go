package controllers

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// autopilotChanged lets a Database through when the auto-pilot's status
// changed: its recommendation changes the effective replicas and tier
// without changing the spec's generation.
type autopilotChanged struct {
	predicate.Funcs
}

// Update reports whether status.autopilot differs between the old and new
// Database.
func (autopilotChanged) Update(e event.UpdateEvent) bool {
	oldDB, okOld := e.ObjectOld.(*dbpilotv1alpha1.Database)
	newDB, okNew := e.ObjectNew.(*dbpilotv1alpha1.Database)
	if !okOld || !okNew {
		return false
	}
	return !equality.Semantic.DeepEqual(oldDB.Status.Autopilot, newDB.Status.Autopilot)
}
