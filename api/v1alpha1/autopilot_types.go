package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutopilotSpec is the owner's policy for the auto-pilot: how far it may go
// and what it aims for. The auto-pilot never edits spec; it records its
// decision in status.autopilot and, in Auto mode, the reconciler applies it.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Off' || (has(self.replicas) && has(self.tiers))",message="spec.autopilot.replicas and spec.autopilot.tiers are required when spec.autopilot.mode is Recommend or Auto"
type AutopilotSpec struct {
	// mode is Off (no auto-pilot), Recommend (decisions are recorded in
	// status.autopilot only) or Auto (decisions are applied). Quote "Off" in
	// YAML: unquoted, YAML reads it as the boolean false.
	// +optional
	// +kubebuilder:default=Off
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto-pilot Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot","urn:alm:descriptor:com.tectonic.ui:select:Off","urn:alm:descriptor:com.tectonic.ui:select:Recommend","urn:alm:descriptor:com.tectonic.ui:select:Auto"}
	Mode AutopilotMode `json:"mode,omitempty"`

	// replicas bounds the number of pods the auto-pilot may choose.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replica Bounds",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot"}
	Replicas *ReplicaBounds `json:"replicas,omitempty"`

	// tiers bounds the tiers the auto-pilot may choose.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tier Bounds",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot"}
	Tiers *TierBounds `json:"tiers,omitempty"`

	// targets are the utilizations the auto-pilot steers towards.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Targets",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Targets *AutopilotTargets `json:"targets,omitempty"`

	// scaleUpStabilizationSeconds is how long a breach must last before the
	// auto-pilot scales up; half of it for a one-pod Database whose pod is
	// saturated in the two newest samples, when the CPU's measured noise
	// could not fake that.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	ScaleUpStabilizationSeconds *int32 `json:"scaleUpStabilizationSeconds,omitempty"`

	// scaleDownStabilizationSeconds is how long load must stay low before the
	// auto-pilot scales down.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ScaleDownStabilizationSeconds *int32 `json:"scaleDownStabilizationSeconds,omitempty"`

	// tierCooldownSeconds is the minimum time between two tier changes.
	// +optional
	// +kubebuilder:default=900
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	TierCooldownSeconds *int32 `json:"tierCooldownSeconds,omitempty"`

	// storage lets the auto-pilot grow volumes before they fill up.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Auto-grow",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Storage *StorageAutoGrow `json:"storage,omitempty"`
}

// ReplicaBounds bounds a number of pods.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="spec.autopilot.replicas.min must not exceed spec.autopilot.replicas.max"
type ReplicaBounds struct {
	// min is the fewest pods the auto-pilot may run.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Fewest Pods",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot","urn:alm:descriptor:com.tectonic.ui:podCount"}
	Min int32 `json:"min"`

	// max is the most pods the auto-pilot may run.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Most Pods",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot","urn:alm:descriptor:com.tectonic.ui:podCount"}
	Max int32 `json:"max"`
}

// TierBounds bounds a tier.
// +kubebuilder:validation:XValidation:rule="{'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.min] <= {'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.max]",message="spec.autopilot.tiers.min must not be a larger tier than spec.autopilot.tiers.max"
type TierBounds struct {
	// min is the smallest tier the auto-pilot may choose.
	// +required
	Min Tier `json:"min"`

	// max is the largest tier the auto-pilot may choose.
	// +required
	Max Tier `json:"max"`
}

// AutopilotTargets are utilizations, in percent, that the auto-pilot steers
// each signal towards.
type AutopilotTargets struct {
	// cpuUtilizationPercent is the target average CPU use of the pods
	// against the tier's CPU, as the HPA measures it; on top of it, no single
	// pod (the primary, which carries the writes, above all) may pass 20
	// points more, at most 95 %.
	// +optional
	// +kubebuilder:default=70
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=95
	CPUUtilizationPercent int32 `json:"cpuUtilizationPercent,omitempty"`

	// memoryUtilizationPercent is the target memory use against the tier's memory.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=95
	MemoryUtilizationPercent int32 `json:"memoryUtilizationPercent,omitempty"`

	// connectionUtilizationPercent is the target share of max_connections in use.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=95
	ConnectionUtilizationPercent int32 `json:"connectionUtilizationPercent,omitempty"`
}

// StorageAutoGrow grows volumes by a step when their use passes a threshold.
type StorageAutoGrow struct {
	// thresholdPercent is the volume use, in percent, that triggers growth.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=95
	ThresholdPercent int32 `json:"thresholdPercent,omitempty"`

	// stepPercent is how much a volume grows each time, in percent of its size.
	// +optional
	// +kubebuilder:default=25
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	StepPercent int32 `json:"stepPercent,omitempty"`

	// maxSize is the largest size the auto-pilot may grow a volume to.
	// +required
	MaxSize resource.Quantity `json:"maxSize"`
}

// AutopilotStatus is what the auto-pilot last decided. Only the auto-pilot
// writes it (with its own field manager).
type AutopilotStatus struct {
	// mode is the mode the decision was made in.
	// +optional
	Mode AutopilotMode `json:"mode,omitempty"`

	// recommendation is the replicas, tier and storage size the auto-pilot
	// wants. In Auto mode the reconciler applies it, clamped to the bounds.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Auto-pilot Recommendation",xDescriptors={"urn:alm:descriptor:text"}
	Recommendation *AutopilotRecommendation `json:"recommendation,omitempty"`

	// lastDecision is the most recent change of recommendation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Auto-pilot Decision",xDescriptors={"urn:alm:descriptor:text"}
	LastDecision *AutopilotDecision `json:"lastDecision,omitempty"`

	// recentDecisions are the last changes of recommendation, newest
	// first, lastDecision among them: what the auto-pilot did and on which
	// numbers, for an audit. At most AutopilotRecentDecisions are kept.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Recent Auto-pilot Decisions",xDescriptors={"urn:alm:descriptor:text"}
	RecentDecisions []AutopilotDecision `json:"recentDecisions,omitempty"`

	// effectiveReplicas is the number of pods the Database runs with: the
	// recommendation in Auto mode (within bounds), else spec.replicas.
	// +optional
	EffectiveReplicas *int32 `json:"effectiveReplicas,omitempty"`

	// effectiveTier is the tier the Database runs with: the recommendation
	// in Auto mode (within bounds), else spec.tier.
	// +optional
	EffectiveTier Tier `json:"effectiveTier,omitempty"`

	// nextEligibleTime is the earliest time the auto-pilot may change the
	// recommendation again.
	// +optional
	NextEligibleTime *metav1.Time `json:"nextEligibleTime,omitempty"`
}

// AutopilotRecentDecisions is how many decisions status.autopilot keeps.
const AutopilotRecentDecisions = 10

// AutopilotRecommendation is a target size for a Database.
type AutopilotRecommendation struct {
	// replicas is the recommended number of pods.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// tier is the recommended tier.
	// +optional
	Tier Tier `json:"tier,omitempty"`

	// storageSize is the recommended volume size.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`

	// maxConnections is the recommended connection limit when connections
	// saturate while memory has room; at most twice the tier's own.
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`
}

// AutopilotDecision records one decision and the numbers behind it.
type AutopilotDecision struct {
	// time is when the decision was made.
	// +required
	Time metav1.Time `json:"time"`

	// action is what the decision does, for example ScaleUp, TierUp, Hold.
	// +required
	Action string `json:"action"`

	// reason is a machine-readable CamelCase reason.
	// +required
	Reason string `json:"reason"`

	// message explains the decision for people.
	// +optional
	Message string `json:"message,omitempty"`

	// signals are the observed values the decision was made on.
	// +optional
	Signals map[string]string `json:"signals,omitempty"`
}
