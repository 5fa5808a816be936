package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/nodedrain"
)

// podNodeField indexes the cached pods by the node they run on.
const podNodeField = "spec.nodeName"

// podNode is the podNodeField index of a pod.
func podNode(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []string{pod.Spec.NodeName}
}

// drainingNodes reads the nodes the pods run on and tells, by name, which
// are being emptied (nodedrain.Draining). A node that no longer exists
// takes its pods with it, which a failover answers, so it counts as not
// draining.
func (r *DatabaseReconciler) drainingNodes(ctx context.Context, pods []corev1.Pod) (map[string]bool, error) {
	draining := map[string]bool{}
	for i := range pods {
		name := pods[i].Spec.NodeName
		if _, seen := draining[name]; seen || name == "" {
			continue
		}
		node := &corev1.Node{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node)
		switch {
		case apierrors.IsNotFound(err):
			draining[name] = false
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		default:
			draining[name] = nodedrain.Draining(node)
		}
	}
	return draining, nil
}

// primaryDrained is the node of the primary's pod when that node is being
// emptied, "" otherwise.
func primaryDrained(s *scope) string {
	if s.designation == nil {
		return ""
	}
	return drainingNodeOf(s, s.designation.Primary)
}

// drainingNodeOf is the node the named pod runs on when that node is
// being emptied, "" otherwise.
func drainingNodeOf(s *scope, name string) string {
	pod := podNamed(s.pods, name)
	if pod == nil || !s.drainingNodes[pod.Spec.NodeName] {
		return ""
	}
	return pod.Spec.NodeName
}

// podsOffDrainingNodes are the pods placed on nodes not being emptied.
func podsOffDrainingNodes(pods []corev1.Pod, draining map[string]bool) []corev1.Pod {
	var off []corev1.Pod
	for i := range pods {
		if node := pods[i].Spec.NodeName; node != "" && !draining[node] {
			off = append(off, pods[i])
		}
	}
	return off
}

// drainChanged lets a node through when it starts or stops being emptied.
type drainChanged struct {
	predicate.Funcs
}

// Create, Delete and Generic let nothing through: a node's pods tell of
// its arrival and departure.
func (drainChanged) Create(event.CreateEvent) bool   { return false }
func (drainChanged) Delete(event.DeleteEvent) bool   { return false }
func (drainChanged) Generic(event.GenericEvent) bool { return false }

// Update reports whether the node's draining changed.
func (drainChanged) Update(e event.UpdateEvent) bool {
	oldNode, okOld := e.ObjectOld.(*corev1.Node)
	newNode, okNew := e.ObjectNew.(*corev1.Node)
	return okOld && okNew && nodedrain.Draining(oldNode) != nodedrain.Draining(newNode)
}

// databasesWithPrimaryOn maps a node to the Databases whose primary's pod
// runs on it.
func (r *DatabaseReconciler) databasesWithPrimaryOn(ctx context.Context, obj client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingFields{podNodeField: obj.GetName()},
		client.MatchingLabels{dbpilotv1alpha1.LabelRole: dbpilotv1alpha1.RolePrimary}); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for _, pod := range pods.Items {
		if name := pod.Labels[dbpilotv1alpha1.LabelDatabase]; name != "" {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: pod.Namespace, Name: name}})
		}
	}
	return requests
}
