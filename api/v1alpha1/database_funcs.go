package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Child names. metadata.name is at most 40 characters (a CRD rule), so every
// derived name, and the StatefulSet's pod and revision names, stay within the
// 63-character limit of DNS labels and label values.

// StatefulSetName is the name of the Database's StatefulSet (and the prefix of
// its pods).
func (d *Database) StatefulSetName() string { return d.Name }

// HeadlessServiceName is the governing Service of the StatefulSet, which gives
// each pod a stable DNS name.
func (d *Database) HeadlessServiceName() string { return d.Name + "-headless" }

// ReadWriteServiceName is the Service that reaches the primary.
func (d *Database) ReadWriteServiceName() string { return d.Name + "-rw" }

// ReadOnlyServiceName is the Service that reaches the replicas.
func (d *Database) ReadOnlyServiceName() string { return d.Name + "-ro" }

// ConfigMapName is the ConfigMap that holds the engine configuration.
func (d *Database) ConfigMapName() string { return d.Name + "-config" }

// PodDisruptionBudgetName is the PodDisruptionBudget of the Database's pods.
func (d *Database) PodDisruptionBudgetName() string { return d.Name }

// VolumeClaimTemplateName is the name of the data volume in the pod template;
// PVCs are named <template>-<statefulset>-<ordinal>.
func (d *Database) VolumeClaimTemplateName() string { return "data" }

// PrimaryPodName is the pod that bootstraps as primary.
func (d *Database) PrimaryPodName() string { return d.PodName(0) }

// PodName is the name of the StatefulSet's pod of an ordinal.
func (d *Database) PodName(ordinal int) string {
	return fmt.Sprintf("%s-%d", d.StatefulSetName(), ordinal)
}

// ClaimName is the name of the volume claim of the pod of an ordinal, as
// the StatefulSet controller names it.
func (d *Database) ClaimName(ordinal int) string {
	return d.VolumeClaimTemplateName() + "-" + d.PodName(ordinal)
}

// CredentialsSecretName is the Secret holding the credentials: the user's own
// when spec.credentialsSecretName is set, else the generated one.
func (d *Database) CredentialsSecretName() string {
	if d.Spec.CredentialsSecretName != "" {
		return d.Spec.CredentialsSecretName
	}
	return d.Name + "-credentials"
}

// GeneratesCredentials reports whether dbpilot creates the credentials Secret.
func (d *Database) GeneratesCredentials() bool { return d.Spec.CredentialsSecretName == "" }

// SelectorLabels select every pod of the Database.
func (d *Database) SelectorLabels() map[string]string {
	return map[string]string{LabelDatabase: d.Name}
}

// Selector is SelectorLabels as a label selector string, for status.selector.
func (d *Database) Selector() string {
	return labels.SelectorFromSet(d.SelectorLabels()).String()
}

// CommonLabels go on every child object.
func (d *Database) CommonLabels() map[string]string {
	return map[string]string{
		LabelName:      string(d.Spec.Engine),
		LabelInstance:  d.Name,
		LabelManagedBy: ManagedByValue,
		LabelComponent: ComponentDatabase,
		LabelDatabase:  d.Name,
	}
}

// EngineVersion is spec.version, or the engine's default when unset.
func (d *Database) EngineVersion() string {
	if d.Spec.Version != "" {
		return d.Spec.Version
	}
	profile, _ := d.Spec.Engine.Profile()
	return profile.DefaultVersion
}

// SpecReplicas is spec.replicas, 1 when unset.
func (d *Database) SpecReplicas() int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// SpecTier is spec.tier, small when unset.
func (d *Database) SpecTier() Tier {
	if d.Spec.Tier == "" {
		return TierSmall
	}
	return d.Spec.Tier
}

// AutopilotActs reports whether the auto-pilot's recommendation is applied.
func (d *Database) AutopilotActs() bool {
	return d.Spec.Autopilot != nil && d.Spec.Autopilot.Mode == AutopilotAuto
}

// autopilotRecommendation returns the auto-pilot's recommendation when the
// auto-pilot acts, else nil.
func (d *Database) autopilotRecommendation() *AutopilotRecommendation {
	if !d.AutopilotActs() || d.Status.Autopilot == nil {
		return nil
	}
	return d.Status.Autopilot.Recommendation
}

// EffectiveReplicas is the number of pods to run: the auto-pilot's
// recommendation clamped to spec.autopilot.replicas in Auto mode, else
// spec.replicas. A missing recommendation or bounds fall back to the spec.
func (d *Database) EffectiveReplicas() int32 {
	rec := d.autopilotRecommendation()
	bounds := d.autopilotReplicaBounds()
	if rec == nil || rec.Replicas == nil || bounds == nil {
		return d.SpecReplicas()
	}
	return max(bounds.Min, min(*rec.Replicas, bounds.Max))
}

// EffectiveTier is the tier to run: the auto-pilot's recommendation clamped to
// spec.autopilot.tiers in Auto mode, else spec.tier. A missing or unknown
// recommendation falls back to the spec.
func (d *Database) EffectiveTier() Tier {
	rec := d.autopilotRecommendation()
	bounds := d.autopilotTierBounds()
	if rec == nil || rec.Tier.Index() < 0 || bounds == nil || bounds.Min.Index() < 0 || bounds.Max.Index() < 0 {
		return d.SpecTier()
	}
	return TierAt(max(bounds.Min.Index(), min(rec.Tier.Index(), bounds.Max.Index())))
}

func (d *Database) autopilotReplicaBounds() *ReplicaBounds {
	if d.Spec.Autopilot == nil {
		return nil
	}
	return d.Spec.Autopilot.Replicas
}

func (d *Database) autopilotTierBounds() *TierBounds {
	if d.Spec.Autopilot == nil {
		return nil
	}
	return d.Spec.Autopilot.Tiers
}

// ServiceHost is the in-cluster DNS name of a Service of this Database.
func (d *Database) ServiceHost(service string) string {
	return fmt.Sprintf("%s.%s.svc", service, d.Namespace)
}

// OwnerReference makes a child object owned (and garbage-collected) by the
// Database.
func (d *Database) OwnerReference() metav1.OwnerReference {
	return *metav1.NewControllerRef(d, GroupVersion.WithKind("Database"))
}

// DefaultStorageSize is the volume size when spec.storage.size is unset (the
// API server defaults it too).
var DefaultStorageSize = resource.MustParse("10Gi")

// SpecStorageSize is spec.storage.size, DefaultStorageSize when unset.
func (d *Database) SpecStorageSize() resource.Quantity {
	if d.Spec.Storage == nil || d.Spec.Storage.Size == nil {
		return DefaultStorageSize
	}
	return *d.Spec.Storage.Size
}

// StorageClassName is spec.storage.storageClassName, nil for the cluster's
// default StorageClass.
func (d *Database) StorageClassName() *string {
	if d.Spec.Storage == nil {
		return nil
	}
	return d.Spec.Storage.StorageClassName
}

// EffectiveStorageSize is the volume size to have: the auto-pilot's
// recommendation in Auto mode when it is larger than spec.storage.size
// (volumes never shrink), else the spec.
func (d *Database) EffectiveStorageSize() resource.Quantity {
	size := d.SpecStorageSize()
	rec := d.autopilotRecommendation()
	if rec == nil || rec.StorageSize == nil || rec.StorageSize.Cmp(size) <= 0 {
		return size
	}
	if d.Spec.Autopilot.Storage != nil && rec.StorageSize.Cmp(d.Spec.Autopilot.Storage.MaxSize) > 0 {
		return d.Spec.Autopilot.Storage.MaxSize
	}
	return *rec.StorageSize
}

// EffectiveMaxConnections is the engine's connection limit: the tier's, or
// the auto-pilot's recommendation in Auto mode, kept between the tier's value
// and its limit. A recommendation made for another tier does not apply.
func (d *Database) EffectiveMaxConnections() int32 {
	size, _ := d.EffectiveTier().Size()
	rec := d.autopilotRecommendation()
	if rec == nil || rec.MaxConnections == nil || rec.Tier != d.EffectiveTier() {
		return size.MaxConnections
	}
	return max(size.MaxConnections, min(*rec.MaxConnections, size.MaxConnectionsLimit))
}
