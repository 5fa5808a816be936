// Package nodedrain tells which nodes are being emptied, so that the
// operator hands a primary over before its node's drain evicts it. Nodes
// are cluster-scoped: its RBAC marker adds to the manager's cluster role
// (config/rbac/cluster_role.yaml).
package nodedrain

import (
	corev1 "k8s.io/api/core/v1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// ClusterAutoscalerDeletionTaint is the taint the cluster autoscaler puts
// on a node it is about to remove, before it evicts the node's pods.
const ClusterAutoscalerDeletionTaint = "ToBeDeletedByClusterAutoscaler"

// Draining reports whether the node is being emptied: cordoned (as
// `kubectl drain` and managed node upgrades do first) or marked for
// removal by the cluster autoscaler.
func Draining(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return true
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == ClusterAutoscalerDeletionTaint {
			return true
		}
	}
	return false
}

// TransformForCache trims a node to what Draining reads before it enters
// the cache: its name and the spec's unschedulable flag and taints. The
// status (images, conditions, addresses) is most of a node's size and is
// never read.
func TransformForCache(in any) (any, error) {
	node, ok := in.(*corev1.Node)
	if !ok {
		return in, nil
	}
	trimmed := &corev1.Node{TypeMeta: node.TypeMeta, Spec: corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints}}
	trimmed.Name, trimmed.UID, trimmed.ResourceVersion, trimmed.Generation = node.Name, node.UID, node.ResourceVersion, node.Generation
	return trimmed, nil
}
