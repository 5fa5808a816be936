package desired

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// plainStrings is a map of the API's string-valued types (label and
// annotation values) as the plain strings objects carry.
func plainStrings[V ~string](m map[string]V) map[string]string {
	plain := make(map[string]string, len(m))
	for key, value := range m {
		plain[key] = string(value)
	}
	return plain
}

// ownerReference is the controller reference every child carries, so it is
// garbage-collected with the Database.
func ownerReference(db *dbpilotv1alpha1.Database) *metav1ac.OwnerReferenceApplyConfiguration {
	ref := db.OwnerReference()
	return metav1ac.OwnerReference().
		WithAPIVersion(ref.APIVersion).
		WithKind(ref.Kind).
		WithName(ref.Name).
		WithUID(ref.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
