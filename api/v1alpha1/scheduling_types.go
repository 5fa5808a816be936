package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// SchedulingSpec says which nodes the Database's pods may run on, how they
// keep apart, and how they rank against other pods. A change rolls the
// pods, replicas first, the primary after a switchover; a pod the
// scheduler cannot place stays Pending, and the roll waits for it with the
// primary untouched.
type SchedulingSpec struct {
	// nodeSelector: the pods run only on nodes that carry every one of
	// these labels (pool: databases).
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="spec.scheduling.nodeSelector: a key is a label key: an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and ., beginning and ending with a letter or digit"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:scheduling"}
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// tolerations let the pods run on nodes with matching taints (a node
	// pool kept for databases: key dedicated, value databases, effect
	// NoSchedule).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tolerations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:scheduling"}
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// podAntiAffinity keeps the Database's pods apart, so one node (or
	// zone) lost takes at most one of them. Without it the scheduler
	// prefers a different node for each pod.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Anti-affinity",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:scheduling"}
	PodAntiAffinity *PodAntiAffinitySpec `json:"podAntiAffinity,omitempty"`

	// priorityClassName is the PriorityClass of the pods (one that ranks
	// databases above batch work, so the scheduler preempts that rather
	// than them). It must exist: until it does, no pod can be created,
	// and the Database is Degraded (SchedulingInvalid).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Priority Class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:scheduling","urn:alm:descriptor:com.tectonic.ui:text"}
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// LabelValue is the value of a Kubernetes label: at most 63 letters,
// digits, -, _ and ., beginning and ending with a letter or digit, or
// empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
type LabelValue string

// Toleration lets the pods run on nodes with a matching taint, as a pod's
// toleration does.
// +kubebuilder:validation:XValidation:rule="self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="spec.scheduling.tolerations: operator Exists matches any value, so it takes none"
// +kubebuilder:validation:XValidation:rule="(has(self.key) && size(self.key) > 0) || self.operator == 'Exists'",message="spec.scheduling.tolerations: a toleration without a key tolerates every taint and needs operator Exists"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="spec.scheduling.tolerations: tolerationSeconds goes with effect NoExecute only"
type Toleration struct {
	// key is the taint's key; empty (with operator Exists) matches every
	// taint.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^(([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`
	Key string `json:"key,omitempty"`

	// operator is Equal (the taint's value is value) or Exists (any value).
	// +optional
	// +kubebuilder:default=Equal
	// +kubebuilder:validation:Enum=Equal;Exists
	Operator corev1.TolerationOperator `json:"operator,omitempty"`

	// value is the taint's value, with operator Equal.
	// +optional
	Value LabelValue `json:"value,omitempty"`

	// effect is the taint effect matched: NoSchedule, PreferNoSchedule or
	// NoExecute; empty matches every effect.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect,omitempty"`

	// tolerationSeconds, with effect NoExecute, is how long a pod stays on
	// a node after the taint appears; unset, it stays.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// PodAntiAffinityType is how strictly the pods keep apart.
// +kubebuilder:validation:Enum=Preferred;Required
type PodAntiAffinityType string

// The pod anti-affinity types.
const (
	// PodAntiAffinityPreferred places the pods apart when the scheduler
	// can, together when it cannot.
	PodAntiAffinityPreferred PodAntiAffinityType = "Preferred"
	// PodAntiAffinityRequired never places two pods of the Database in the
	// same topology domain: a pod with no free domain stays Pending.
	PodAntiAffinityRequired PodAntiAffinityType = "Required"
)

// PodAntiAffinitySpec keeps the Database's pods in different topology
// domains.
type PodAntiAffinitySpec struct {
	// type is Preferred (the default: apart when possible) or Required
	// (never two pods in one domain; a pod with no domain left stays
	// Pending, and so does a roll or scale-up waiting for it).
	// +optional
	// +kubebuilder:default=Preferred
	Type PodAntiAffinityType `json:"type,omitempty"`

	// topologyKey is the node label whose values are the domains:
	// kubernetes.io/hostname (the default, one pod per node) or
	// topology.kubernetes.io/zone (one per zone).
	// +optional
	// +kubebuilder:default="kubernetes.io/hostname"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	TopologyKey string `json:"topologyKey,omitempty"`
}
