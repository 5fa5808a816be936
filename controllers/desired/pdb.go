package desired

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// NeedsPodDisruptionBudget reports whether a StatefulSet of pods pods is big
// enough for a budget to make sense: with one pod, a budget would block node
// drains.
func NeedsPodDisruptionBudget(pods int32) bool {
	return pods >= 2
}

// PodDisruptionBudget lets voluntary disruptions (drains, upgrades) take one
// pod at a time.
func PodDisruptionBudget(db *dbpilotv1alpha1.Database) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(db.PodDisruptionBudgetName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(db.SelectorLabels())))
}
