package desired

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// withScheduling sets spec.scheduling on the pod spec: its node selector,
// tolerations, PriorityClass and the pods' anti-affinity. Without
// spec.scheduling the pod spec is what it was before the field existed, so
// an operator upgrade rolls no pod.
func withScheduling(spec *corev1ac.PodSpecApplyConfiguration, db *dbpilotv1alpha1.Database) *corev1ac.PodSpecApplyConfiguration {
	spec = spec.WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(podAntiAffinity(db)))
	scheduling := db.Spec.Scheduling
	if scheduling == nil {
		return spec
	}
	if len(scheduling.NodeSelector) > 0 {
		spec = spec.WithNodeSelector(plainStrings(scheduling.NodeSelector))
	}
	for _, t := range scheduling.Tolerations {
		toleration := corev1ac.Toleration().WithOperator(t.Operator)
		if t.Key != "" {
			toleration = toleration.WithKey(t.Key)
		}
		if t.Value != "" {
			toleration = toleration.WithValue(string(t.Value))
		}
		if t.Effect != "" {
			toleration = toleration.WithEffect(t.Effect)
		}
		if t.TolerationSeconds != nil {
			toleration = toleration.WithTolerationSeconds(*t.TolerationSeconds)
		}
		spec = spec.WithTolerations(toleration)
	}
	if scheduling.PriorityClassName != "" {
		spec = spec.WithPriorityClassName(scheduling.PriorityClassName)
	}
	return spec
}

// podAntiAffinity keeps the Database's pods in different domains of the
// topology key (a node by default): preferred unless the owner requires it.
func podAntiAffinity(db *dbpilotv1alpha1.Database) *corev1ac.PodAntiAffinityApplyConfiguration {
	topologyKey := corev1.LabelHostname
	required := false
	if s := db.Spec.Scheduling; s != nil && s.PodAntiAffinity != nil {
		if s.PodAntiAffinity.TopologyKey != "" {
			topologyKey = s.PodAntiAffinity.TopologyKey
		}
		required = s.PodAntiAffinity.Type == dbpilotv1alpha1.PodAntiAffinityRequired
	}
	term := corev1ac.PodAffinityTerm().
		WithTopologyKey(topologyKey).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(db.SelectorLabels()))
	if required {
		return corev1ac.PodAntiAffinity().WithRequiredDuringSchedulingIgnoredDuringExecution(term)
	}
	return corev1ac.PodAntiAffinity().WithPreferredDuringSchedulingIgnoredDuringExecution(
		corev1ac.WeightedPodAffinityTerm().WithWeight(100).WithPodAffinityTerm(term))
}
