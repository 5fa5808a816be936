package desired

import (
	"maps"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// podLabels are the pods' labels: spec.podMetadata's, then dbpilot's own
// (the API server refuses a key of the user's among them).
func podLabels(db *dbpilotv1alpha1.Database) map[string]string {
	labels := map[string]string{}
	if m := db.Spec.PodMetadata; m != nil {
		labels = plainStrings(m.Labels)
	}
	maps.Copy(labels, db.CommonLabels())
	return labels
}

// podAnnotations are the pods' annotations: spec.podMetadata's, then
// dbpilot's own.
func podAnnotations(db *dbpilotv1alpha1.Database, own map[string]string) map[string]string {
	annotations := map[string]string{}
	if m := db.Spec.PodMetadata; m != nil {
		annotations = plainStrings(m.Annotations)
	}
	maps.Copy(annotations, own)
	return annotations
}
