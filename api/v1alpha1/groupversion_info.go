// Package v1alpha1 contains the dbpilot.io/v1alpha1 API: the Database kind, its
// constants (engines, tiers, condition types and reasons, labels) and the small
// pure methods that derive names and effective values from a Database.
// +kubebuilder:object:generate=true
// +groupName=dbpilot.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "dbpilot.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Database{}, &DatabaseList{}, &DatabaseBackup{}, &DatabaseBackupList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
