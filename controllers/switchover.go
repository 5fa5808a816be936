package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
)

// switchoverMaxLag is how far behind its primary a replica may be and still
// take over in a switchover.
const switchoverMaxLag = 5 * time.Second

// catchUpTimeout bounds how long a switchover waits for the new primary to
// receive everything the demoted one wrote.
const catchUpTimeout = 30 * time.Second

// switchoverTarget is the replica the primary should hand over to, and
// why: the user's dbpilot.io/switchover-to annotation (requested); a
// hibernation (the pod of ordinal 0, which starts first on resume); a
// scale down that would remove the primary's ordinal (the most advanced
// replica that stays); the primary's node being drained (the most advanced
// replica on another node, when one can take over); a rollout about to
// restart the primary's pod. "" when no switchover is wanted.
func switchoverTarget(s *scope) (target, why string, requested bool) {
	if name := s.db.Annotations[dbpilotv1alpha1.AnnotationSwitchoverTo]; name != "" {
		return name, "requested with the " + dbpilotv1alpha1.AnnotationSwitchoverTo + " annotation", true
	}
	d := s.designation
	if d == nil {
		return "", "", false
	}
	if s.db.Spec.Hibernate && ordinalOf(d.Primary) != 0 {
		return s.db.PodName(0), "spec.hibernate stops the pods, and the pod of ordinal 0 starts first on resume", false
	}
	if ordinalOf(d.Primary) >= int(s.db.EffectiveReplicas()) {
		var staying []corev1.Pod
		for i := range s.pods {
			if ordinalOf(s.pods[i].Name) < int(s.db.EffectiveReplicas()) {
				staying = append(staying, s.pods[i])
			}
		}
		return chooseCandidate(s.db.Spec.Engine, staying, s.instances, d.Primary),
			fmt.Sprintf("spec.replicas %d removes the primary's pod", s.db.EffectiveReplicas()), false
	}
	if node := primaryDrained(s); node != "" {
		if target := chooseCandidate(s.db.Spec.Engine, podsOffDrainingNodes(s.pods, s.drainingNodes), s.instances, d.Primary); target != "" {
			return target, fmt.Sprintf("the primary's node %s is being drained", node), false
		}
	}
	if s.rolloutHandover != "" && drainingNodeOf(s, s.rolloutHandover) == "" {
		// Not onto a node being drained: the drain would hand it back.
		return s.rolloutHandover, "a rollout is about to restart the primary's pod", false
	}
	return "", "", false
}

// primaryPlace is where the designated primary is for the rollout, reading
// the instances' reports (once per pass) to know whether it can move.
func (r *DatabaseReconciler) primaryPlace(ctx context.Context, s *scope) primaryPlace {
	d := s.designation
	if d == nil {
		return primaryPlace{}
	}
	if s.instances == nil {
		s.instances = readInstances(ctx, s)
	}
	return primaryPlace{
		ordinal:    ordinalOf(d.Primary),
		switchable: failsOver(s.db) && s.instances[d.Primary].Role == layout.RolePrimary,
	}
}

// switchOver hands the primary over to a streaming, caught-up replica with
// nothing committed lost: the designation moves (fencing the primary out of
// the read-write Service), the primary is demoted (it stops taking writes
// and shuts down cleanly, sending its replicas everything), the target
// waits until it has received the primary's last position, and is
// promoted. A request that cannot be honoured is refused with a Warning
// Event naming why, and its annotation removed.
func (r *DatabaseReconciler) switchOver(ctx context.Context, s *scope) (time.Duration, error) {
	d := s.designation
	if d != nil && d.FormerPrimary == "" && failsOver(s.db) {
		draining, err := r.drainingNodes(ctx, s.pods)
		if err != nil {
			return 0, err
		}
		s.drainingNodes = draining
	}
	target, why, requested := switchoverTarget(s)
	drained := primaryDrained(s)
	if drained != "" && target == "" {
		s.drainWait = fmt.Sprintf("the primary %s's node %s is being drained: its eviction waits until a caught-up replica on another node can take over, and none can yet", d.Primary, drained)
		s.drainWaitNode = drained
		return 5 * time.Second, nil
	}
	if d == nil || target == "" || d.FormerPrimary != "" {
		return 0, nil
	}
	db := s.db
	if !failsOver(db) {
		if requested {
			r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonSwitchoverRefused, "SwitchOver",
				"Switchover to %s refused: dbpilot does not move a MySQL primary yet", target)
		}
		return 0, r.forgetSwitchoverRequest(ctx, db, requested)
	}
	if target == d.Primary {
		return 0, r.forgetSwitchoverRequest(ctx, db, requested)
	}
	if why := switchoverProblem(s, target); why != "" {
		if requested {
			r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonSwitchoverRefused, "SwitchOver",
				"Switchover to %s refused: %s", target, why)
			return 0, r.forgetSwitchoverRequest(ctx, db, requested)
		}
		if drained != "" {
			s.drainWait = fmt.Sprintf("the primary %s's node %s is being drained: its eviction waits for a switchover to %s, which cannot take over yet: %s", d.Primary, drained, target, why)
			s.drainWaitNode = drained
		}
		return 5 * time.Second, nil
	}
	now := r.clock().Now()
	next, err := designation.Move(ctx, r.Client, *d, target, designation.ReasonSwitchover, now, now)
	if apierrors.IsConflict(err) {
		return failoverPoll, nil
	}
	if err != nil {
		return 0, fmt.Errorf("designating %s the primary: %w", target, err)
	}
	s.designation = &next
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonSwitchingOver, "SwitchOver",
		"Switching the primary over from %s to %s (%s)", d.Primary, target, why)
	log := logf.FromContext(ctx).WithValues("from", d.Primary, "to", target)
	log.Info("switching over")
	former := podNamed(s.pods, d.Primary)
	if err := r.labelRole(ctx, former, dbpilotv1alpha1.RoleReplica); err != nil {
		return 0, err
	}
	token, err := r.replicationPassword(ctx, db)
	if err != nil {
		return 0, err
	}
	var demoted layout.DemoteResponse
	if err := postInstance(ctx, s.instanceTarget(former), layout.DemotePath, token, demoteTimeout, layout.DemoteRequest{Epoch: next.Epoch}, &demoted); err != nil {
		// It may have stopped anyway; it is promoted once the former
		// primary no longer reports itself one (failOver).
		return failoverPoll, fmt.Errorf("demoting %s: %w", d.Primary, err)
	}
	if err := r.waitCaughtUp(ctx, s, podNamed(s.pods, target), demoted.Position); err != nil {
		return failoverPoll, err
	}
	if err := r.promote(ctx, s, target); err != nil {
		return failoverPoll, err
	}
	return failoverPoll, r.forgetSwitchoverRequest(ctx, db, requested)
}

// switchoverProblem says why target cannot take over now, or "".
func switchoverProblem(s *scope, target string) string {
	d := s.designation
	pod := podNamed(s.pods, target)
	report, answers := s.instances[target]
	primary := podNamed(s.pods, d.Primary)
	switch {
	case pod == nil:
		return fmt.Sprintf("%s is not a pod of this Database", target)
	case fenced(s.db, pod):
		return fmt.Sprintf("%s is fenced", target)
	case fencedNamed(s, d.Primary):
		return fmt.Sprintf("the primary %s is fenced", d.Primary)
	case ordinalOf(target) >= int(s.db.EffectiveReplicas()):
		return fmt.Sprintf("%s is beyond spec.replicas and is being removed", target)
	case primary == nil || !podReady(primary) || s.instances[d.Primary].Role != layout.RolePrimary:
		return fmt.Sprintf("the primary %s is not serving (a lost primary is replaced by a failover)", d.Primary)
	case !answers || !podReady(pod) || report.Role != layout.RoleReplica:
		return fmt.Sprintf("%s is not a ready replica", target)
	case !report.Replicating:
		return fmt.Sprintf("%s does not stream from the primary", target)
	case report.LagSeconds == nil || *report.LagSeconds > switchoverMaxLag.Seconds():
		return fmt.Sprintf("%s is not caught up (more than %s behind the primary)", target, switchoverMaxLag)
	}
	return ""
}

// waitCaughtUp waits until the target reports a position at least the
// demoted primary's last one.
func (r *DatabaseReconciler) waitCaughtUp(ctx context.Context, s *scope, target *corev1.Pod, position string) error {
	db := s.db
	want, ok := positionRank(db.Spec.Engine, position)
	if !ok {
		return fmt.Errorf("the demoted primary reported the position %q", position)
	}
	deadline := time.Now().Add(catchUpTimeout)
	for {
		report, err := readInstance(ctx, s.instanceTarget(target))
		if err == nil {
			if got, ok := positionRank(db.Spec.Engine, report.Position); ok && got >= want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not receive the former primary's last position %s within %s", target.Name, position, catchUpTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// labelRole sets a pod's role label.
func (r *DatabaseReconciler) labelRole(ctx context.Context, pod *corev1.Pod, role string) error {
	if pod == nil || pod.Labels[dbpilotv1alpha1.LabelRole] == role {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[dbpilotv1alpha1.LabelRole] = role
	if err := r.Client.Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("labelling pod %s as %s: %w", pod.Name, role, err)
	}
	return nil
}

// forgetSwitchoverRequest removes the user's switchover annotation once it
// was honoured or refused.
func (r *DatabaseReconciler) forgetSwitchoverRequest(ctx context.Context, db *dbpilotv1alpha1.Database, requested bool) error {
	if !requested {
		return nil
	}
	patch := client.MergeFrom(db.DeepCopy())
	delete(db.Annotations, dbpilotv1alpha1.AnnotationSwitchoverTo)
	if err := r.Client.Patch(ctx, db, patch); err != nil {
		return fmt.Errorf("removing the %s annotation: %w", dbpilotv1alpha1.AnnotationSwitchoverTo, err)
	}
	return nil
}
