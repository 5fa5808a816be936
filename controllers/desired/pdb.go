package desired

import (
	"maps"

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

// NeedsPrimaryPodDisruptionBudget reports whether the Database's primary
// is kept from eviction (PrimaryPodDisruptionBudget): where it has pods
// enough for a budget and a primary that moves (PostgreSQL, MariaDB).
func NeedsPrimaryPodDisruptionBudget(db *dbpilotv1alpha1.Database, pods int32) bool {
	return NeedsPodDisruptionBudget(pods) && primaryMoves(db)
}

// primaryMoves reports whether dbpilot hands the Database's primary over
// to a replica: not MySQL's yet.
func primaryMoves(db *dbpilotv1alpha1.Database) bool {
	return db.Spec.Engine != dbpilotv1alpha1.EngineMySQL
}

// PodDisruptionBudget lets voluntary disruptions (drains, upgrades) take one
// of the StatefulSet's pods pods at a time. Where the primary moves it
// covers the replicas alone, the primary being PrimaryPodDisruptionBudget's
// (a pod under two budgets cannot be evicted at all), and keeps all of them
// but one: a number, since a share or maxUnavailable would count the
// StatefulSet's every pod, the primary's too. A MySQL Database's covers
// every pod.
func PodDisruptionBudget(db *dbpilotv1alpha1.Database, pods int32) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	selector := maps.Clone(db.SelectorLabels())
	spec := policyv1ac.PodDisruptionBudgetSpec().WithMaxUnavailable(intstr.FromInt32(1))
	if primaryMoves(db) {
		selector[dbpilotv1alpha1.LabelRole] = dbpilotv1alpha1.RoleReplica
		spec = policyv1ac.PodDisruptionBudgetSpec().WithMinAvailable(intstr.FromInt32(max(pods-2, 0)))
	}
	return policyv1ac.PodDisruptionBudget(db.PodDisruptionBudgetName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(spec.WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))
}

// PrimaryPodDisruptionBudget refuses every eviction of the primary's pod,
// so a drain of its node waits while the operator hands the primary over
// to a replica on another node; the pod, a replica then, is evicted under
// PodDisruptionBudget.
func PrimaryPodDisruptionBudget(db *dbpilotv1alpha1.Database) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	selector := maps.Clone(db.SelectorLabels())
	selector[dbpilotv1alpha1.LabelRole] = dbpilotv1alpha1.RolePrimary
	return policyv1ac.PodDisruptionBudget(db.PrimaryPodDisruptionBudgetName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))
}
