package v1alpha1

// PodMetadata are labels and annotations of the user's for the Database's
// pods: a cost centre, a team, a service mesh's or a backup tool's
// annotations. They go on the pod template, so a change rolls the pods,
// replicas first, the primary after a switchover, and tools that read them
// when a pod is created (admission webhooks) see them. Keys under
// dbpilot.io/, app.kubernetes.io/, kubernetes.io/ and k8s.io/ (and their
// subdomains) are dbpilot's or Kubernetes' own and are rejected.
type PodMetadata struct {
	// labels are added to the pods' labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="spec.podMetadata.labels: a key is a label key: an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and ., beginning and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(dbpilot[.]io|kubernetes[.]io|k8s[.]io)/') && k != 'controller-revision-hash')",message="spec.podMetadata.labels: keys under dbpilot.io/, kubernetes.io/ and k8s.io/ (app.kubernetes.io/ among them) and controller-revision-hash are dbpilot's or Kubernetes' own"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:podMetadata"}
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// annotations are added to the pods' annotations.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="spec.podMetadata.annotations: a key is an annotation key: an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and ., beginning and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(dbpilot[.]io|kubernetes[.]io|k8s[.]io)/'))",message="spec.podMetadata.annotations: keys under dbpilot.io/, kubernetes.io/ and k8s.io/ are dbpilot's or Kubernetes' own"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Annotations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:podMetadata"}
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`
}

// AnnotationValue is the value of an annotation of the user's: any text
// up to 4096 characters.
// +kubebuilder:validation:MaxLength=4096
type AnnotationValue string
