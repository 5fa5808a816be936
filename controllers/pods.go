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

// reconcilePodRoles replaces a lost primary (failOver) and labels each pod
// with its role, which the read-write and read-only Services select on:
// only the designated primary is labelled primary, unless it reports
// itself a replica (its promotion is pending). Any other pod is a replica,
// whatever it reports: a former primary that comes back claiming the role
// is kept out of the read-write Service.
func (r *DatabaseReconciler) reconcilePodRoles(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.instances == nil {
		s.instances = readInstances(ctx, s)
	}
	handover, err := r.switchOver(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	again, err := r.failOver(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if handover > 0 && (again == 0 || handover < again) {
		again = handover
	}
	designated := s.db.PrimaryPodName()
	if s.designation != nil {
		designated = s.designation.Primary
	}
	for i := range s.pods {
		pod := &s.pods[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		role := podRole(designated, pod, s.instances)
		if fenced(s.db, pod) {
			role = dbpilotv1alpha1.RoleFenced
		}
		if err := r.labelRole(ctx, pod, role); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, pod := range strayPrimaries(designated, s.pods, s.instances) {
		if failsOver(s.db) && !fenced(s.db, pod) {
			r.demoteAway(ctx, s, pod)
		}
	}
	r.reconcileFencing(ctx, s)
	r.dropStaleSlots(ctx, s)
	result := ctrl.Result{RequeueAfter: again}
	if len(s.instances) > 0 {
		result = soonest(result, ctrl.Result{RequeueAfter: instancePoll(s.pods, s.instances)})
	}
	if s.usersObserved && usersPending(s.users, designated, s.instances, r.clock().Now()) {
		result = soonest(result, ctrl.Result{RequeueAfter: instanceSettlingPoll})
	}
	if s.usersObserved {
		// status.users turns Expired once the primary locked the user.
		result = soonest(result, ctrl.Result{RequeueAfter: untilNextExpiry(s.users, r.clock().Now())})
	}
	return result, nil
}

// strayPrimaries are the pods other than the designated primary whose
// instance reports itself a primary: a former primary that came back before
// its mounted designation changed. They are asked to demote themselves
// (their label keeps them out of the read-write Service meanwhile).
func strayPrimaries(designated string, pods []corev1.Pod, reports map[string]layout.InstanceStatus) []*corev1.Pod {
	var stray []*corev1.Pod
	for i := range pods {
		if pods[i].Name != designated && reports[pods[i].Name].Role == layout.RolePrimary {
			stray = append(stray, &pods[i])
		}
	}
	return stray
}

// podRole is the role a pod is labelled with: primary for the designated
// primary unless it reports itself a replica, replica for every other pod.
func podRole(designated string, pod *corev1.Pod, reports map[string]layout.InstanceStatus) string {
	if pod.Name != designated {
		return dbpilotv1alpha1.RoleReplica
	}
	if report, ok := reports[pod.Name]; ok && report.Role == layout.RoleReplica {
		return dbpilotv1alpha1.RoleReplica
	}
	return dbpilotv1alpha1.RolePrimary
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
	authority, err := instanceAuthority(ctx, r.Client, db)
	if err != nil {
		return fmt.Errorf("reading the server certificate's authority: %w", err)
	}
	s.instanceAuthority = authority
	s.observed = true
	return nil
}
