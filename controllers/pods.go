package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// reconcilePodRoles labels each pod with its role, which the read-write and
// read-only Services select on: the role its instance program reports, or,
// for a pod that has not reported one yet, the role it bootstraps as (the
// pod of ordinal 0 initializes the primary, the others clone it). A pod
// that stops answering keeps its label.
func (r *DatabaseReconciler) reconcilePodRoles(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	s.instances = readInstances(ctx, s.pods)
	for i := range s.pods {
		pod := &s.pods[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		role := podRole(s.db, pod, s.instances)
		if pod.Labels[dbpilotv1alpha1.LabelRole] == role {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[dbpilotv1alpha1.LabelRole] = role
		if err := r.Client.Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("labelling pod %s as %s: %w", pod.Name, role, err)
		}
	}
	r.dropStaleSlots(ctx, s)
	if len(s.instances) > 0 {
		return ctrl.Result{RequeueAfter: instancePollInterval}, nil
	}
	return ctrl.Result{}, nil
}

// podRole is the role a pod should be labelled with. A report of primary is
// believed only when no other pod reports primary too: the -rw Service must
// never select two writers, so with two claimants the labels stay as they
// are.
func podRole(db *dbpilotv1alpha1.Database, pod *corev1.Pod, reports map[string]layout.InstanceStatus) string {
	report, ok := reports[pod.Name]
	switch {
	case ok && report.Role == layout.RoleReplica:
		return report.Role
	case ok && report.Role == layout.RolePrimary && currentPrimary(reports) == pod.Name:
		return report.Role
	}
	if current := pod.Labels[dbpilotv1alpha1.LabelRole]; current != "" {
		return current
	}
	if pod.Name == db.PrimaryPodName() {
		return dbpilotv1alpha1.RolePrimary
	}
	return dbpilotv1alpha1.RoleReplica
}

// observe reads the StatefulSet and pods into the scope, once per pass.
func (r *DatabaseReconciler) observe(ctx context.Context, s *scope) error {
	if s.observed {
		return nil
	}
	db := s.db
	sts := &appsv1.StatefulSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.StatefulSetName()}, sts)
	switch {
	case err == nil:
		s.statefulSet = sts
	case client.IgnoreNotFound(err) != nil:
		return fmt.Errorf("reading StatefulSet: %w", err)
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(db.Namespace), client.MatchingLabels(db.SelectorLabels())); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	s.pods = pods.Items
	s.observed = true
	return nil
}
