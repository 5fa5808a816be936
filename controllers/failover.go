package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
)

// Timeouts of the requests that move the primary.
const (
	promoteTimeout = 90 * time.Second
	demoteTimeout  = 2 * time.Minute
	// failoverPoll is how soon a Database with a failover in progress is
	// looked at again.
	failoverPoll = time.Second
)

// reconcileDesignation reads the designated primary, creating the first
// designation (the pod of ordinal 0) for a new Database, or adopting the one
// a deleted Database of the same name retained with its volumes: every pod
// mounts it, so it exists before the StatefulSet.
func (r *DatabaseReconciler) reconcileDesignation(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.DesignationConfigMapName()}, cm)
	if apierrors.IsNotFound(err) {
		cm = desired.DesignationConfigMap(db)
		err = r.Client.Create(ctx, cm)
		if apierrors.IsAlreadyExists(err) {
			// Created by an earlier pass the cache has not seen yet.
			return ctrl.Result{RequeueAfter: failoverPoll}, nil
		}
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the designation ConfigMap: %w", err)
	}
	if metav1.GetControllerOf(cm) == nil {
		// Retained when a Database of this name was deleted: its
		// volumes' primary is still the one it names.
		cm.OwnerReferences = append(cm.OwnerReferences, db.OwnerReference())
		delete(cm.Labels, dbpilotv1alpha1.LabelRetainedFrom)
		if err := r.Client.Update(ctx, cm); err != nil {
			return ctrl.Result{}, fmt.Errorf("adopting the retained designation: %w", err)
		}
	}
	d, err := designation.Read(cm)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.designation = &d
	return ctrl.Result{}, nil
}

// failOver replaces a primary that has been lost (its pod gone, or not
// ready) for longer than spec.failover.delaySeconds with the most advanced
// replica: the designation moves first (the one serialized decision), so
// the former primary is fenced (its label, and its instance's designation,
// make it a replica), then the replica is promoted. It also finishes a
// move another pass started: a designated primary that still reports
// itself a replica is promoted, and one that serves settles the failover.
// It returns how soon to look again.
func (r *DatabaseReconciler) failOver(ctx context.Context, s *scope) (time.Duration, error) {
	d := s.designation
	if d == nil || !failsOver(s.db) {
		return 0, nil
	}
	db, now := s.db, r.clock().Now()
	pod := podNamed(s.pods, d.Primary)
	report, answers := s.instances[d.Primary]
	if fencedNamed(s, d.Primary) || report.Fenced {
		// Fenced for investigation (or about to be unfenced): the user
		// stopped it on purpose.
		return 0, nil
	}
	switch {
	case answers && report.Role == layout.RolePrimary:
		if d.FormerPrimary != "" && pod != nil && podReady(pod) {
			return 0, r.settle(ctx, s, now)
		}
		if d.FormerPrimary != "" {
			return failoverPoll, nil
		}
		return 0, nil
	case answers && report.Role == layout.RoleReplica:
		// Designated, but a replica: a move another pass started, or a
		// Database re-created on volumes a failover had left this way.
		if d.Reason == designation.ReasonSwitchover {
			return r.finishSwitchover(ctx, s, report, now)
		}
		return failoverPoll, r.promote(ctx, s, d.Primary)
	}
	if db.Spec.Hibernate {
		// Its pods stop on purpose.
		return 0, nil
	}
	lostAt, lost := primaryLostAt(pod, now)
	if !lost {
		return 0, nil
	}
	if lostAt.Before(d.DesignatedAt) {
		// A newly designated primary gets the whole delay.
		lostAt = d.DesignatedAt
	}
	if wait := lostAt.Add(db.FailoverDelay()).Sub(now); wait > 0 {
		return wait, nil
	}
	candidate := chooseCandidate(db.Spec.Engine, s.pods, s.instances, d.Primary)
	if candidate == "" {
		s.failoverProblem = fmt.Sprintf("Primary %s is lost and no replica answers to replace it", d.Primary)
		return 5 * time.Second, nil
	}
	next, err := designation.Move(ctx, r.Client, *d, candidate, designation.ReasonFailover, lostAt, now)
	if apierrors.IsConflict(err) {
		// Someone moved the designation since this pass read it: read it
		// again rather than decide twice.
		return failoverPoll, nil
	}
	if err != nil {
		return 0, fmt.Errorf("designating %s the primary: %w", candidate, err)
	}
	s.designation = &next
	failovers.WithLabelValues(db.Namespace, db.Name, string(db.Spec.Engine)).Inc()
	r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonFailingOver, "FailOver",
		"Primary %s has not served since %s (failover delay %s): promoting %s, the most advanced replica",
		d.Primary, lostAt.UTC().Format(time.RFC3339), db.FailoverDelay(), candidate)
	logf.FromContext(ctx).Info("failing over", "from", d.Primary, "to", candidate, "epoch", next.Epoch)
	if former := podNamed(s.pods, d.Primary); former != nil {
		if err := r.fenceFrozen(ctx, s, former); err != nil {
			return 0, err
		}
		r.demoteAway(ctx, s, former)
	}
	return failoverPoll, r.promote(ctx, s, candidate)
}

// failsOver reports whether dbpilot moves the primary of the Database's
// engine: PostgreSQL and MariaDB. A MySQL primary's pod restarts in place.
func failsOver(db *dbpilotv1alpha1.Database) bool {
	return db.Spec.Engine != dbpilotv1alpha1.EngineMySQL
}

// fenceFrozen makes sure a replaced primary whose pod still runs but whose
// instance program does not answer (frozen: its engine may still take
// writes on connections opened before its label changed) can no longer
// write, before another instance is promoted: its pod is deleted with a
// one-second grace, which kills its containers, and the promotion waits
// until the pod is gone (the volume stays; the StatefulSet makes the pod
// again, and it rejoins as a replica). An instance program that answers
// at all, or is gone (its engine dies with it), needs nothing.
func (r *DatabaseReconciler) fenceFrozen(ctx context.Context, s *scope, pod *corev1.Pod) error {
	if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() {
		return nil
	}
	_, err := readInstance(ctx, s.instanceTarget(pod))
	var netErr net.Error
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()) {
		return nil
	}
	uid := pod.UID
	if err := r.Client.Delete(ctx, pod, client.GracePeriodSeconds(1), client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the unresponsive former primary's pod %s: %w", pod.Name, err)
	}
	r.Recorder.Eventf(s.db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonFailingOver, "Fence",
		"Deleting pod %s: its instance program does not answer, and its engine must not take writes once another instance is the primary (its volume is kept)", pod.Name)
	// The pod object goes once the kubelet has killed its containers:
	// only then is the engine certainly stopped. A node that does not
	// answer never confirms; the promotion then goes ahead after the
	// wait, for the database's availability.
	deadline := time.Now().Add(fenceWait)
	for time.Now().Before(deadline) {
		current := &corev1.Pod{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), current)
		if apierrors.IsNotFound(err) || (err == nil && current.UID != uid) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	logf.FromContext(ctx).Info("the unresponsive former primary's pod was not confirmed gone; promoting anyway", "pod", pod.Name)
	return nil
}

// fenceWait bounds how long a failover waits for a frozen former primary's
// pod to be gone.
const fenceWait = 30 * time.Second

// settle ends a failover once the new primary serves: an Event and the
// FailingOver condition say how long writes were unavailable.
func (r *DatabaseReconciler) settle(ctx context.Context, s *scope, now time.Time) error {
	d := s.designation
	unavailable := now.Sub(d.PrimaryLostAt).Seconds()
	message := fmt.Sprintf("%s replaced %s as the primary at %s (%s); the read-write Service had no primary for %.1f s",
		d.Primary, d.FormerPrimary, now.UTC().Format(time.RFC3339), d.Reason, math.Max(unavailable, 0))
	settled, err := designation.Settle(ctx, r.Client, *d)
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("settling the failover: %w", err)
	}
	s.designation = &settled
	s.failoverSettled = message
	reason := dbpilotv1alpha1.EventReasonFailedOver
	if d.Reason == designation.ReasonSwitchover {
		reason = dbpilotv1alpha1.EventReasonSwitchedOver
	}
	r.Recorder.Eventf(s.db, nil, corev1.EventTypeNormal, reason, "FailOver", "%s", message)
	return nil
}

// finishSwitchover goes on with a switchover another pass started, whose
// target (report) is still a replica: not before the former primary has
// stopped taking writes (its demotion, or its own watcher), then as
// completeSwitchover decides.
func (r *DatabaseReconciler) finishSwitchover(ctx context.Context, s *scope, report layout.InstanceStatus, now time.Time) (time.Duration, error) {
	d, db := s.designation, s.db
	former, formerAnswers := s.instances[d.FormerPrimary]
	if formerAnswers && former.Role == layout.RolePrimary {
		return failoverPoll, nil
	}
	step, wait := completeSwitchover(db.Spec.Engine, report, former, formerAnswers, d.DesignatedAt, now, db.FailoverDelay())
	switch step {
	case switchoverWait:
		return wait, nil
	case switchoverRevert:
		next, err := designation.Move(ctx, r.Client, *d, d.FormerPrimary, designation.ReasonSwitchover, now, now)
		if apierrors.IsConflict(err) {
			return failoverPoll, nil
		}
		if err != nil {
			return 0, fmt.Errorf("designating %s the primary again: %w", d.FormerPrimary, err)
		}
		s.designation = &next
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonSwitchoverReverted, "SwitchOver",
			"Switchover to %s abandoned: it holds the WAL (binary log) up to %s, the former primary %s up to %s, which it can no longer receive; %s is the primary again and nothing committed is lost",
			d.Primary, report.Position, d.FormerPrimary, former.Position, d.FormerPrimary)
		return failoverPoll, nil
	}
	return failoverPoll, r.promote(ctx, s, d.Primary)
}

// promote asks the designated replica's instance program to become the
// primary, with a slot for every other instance.
func (r *DatabaseReconciler) promote(ctx context.Context, s *scope, name string) error {
	pod := podNamed(s.pods, name)
	if pod == nil || pod.Status.PodIP == "" {
		return nil
	}
	token, err := r.replicationPassword(ctx, s.db)
	if err != nil {
		return err
	}
	var slots []string
	for _, slot := range keptSlots(s.db, s.pods) {
		if slot != layout.SlotName(name) {
			slots = append(slots, slot)
		}
	}
	req := layout.PromoteRequest{Epoch: s.designation.Epoch, Slots: slots}
	if err := postInstance(ctx, s.instanceTarget(pod), layout.PromotePath, token, promoteTimeout, req, nil); err != nil {
		return fmt.Errorf("promoting %s: %w", name, err)
	}
	return nil
}

// demoteAway asks a replaced primary that may still run to stop taking
// writes and follow the new primary, without waiting: it may be
// unreachable, and its label and designation fence it anyway.
func (r *DatabaseReconciler) demoteAway(ctx context.Context, s *scope, pod *corev1.Pod) {
	if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() {
		return
	}
	token, err := r.replicationPassword(ctx, s.db)
	if err != nil {
		return
	}
	log := logf.FromContext(ctx)
	target, name := s.instanceTarget(pod), pod.Name
	req := layout.DemoteRequest{Epoch: s.designation.Epoch}
	go func() {
		if err := postInstance(context.Background(), target, layout.DemotePath, token, demoteTimeout, req, nil); err != nil {
			log.V(1).Info("the replaced primary did not take its demotion (it is fenced by its label and designation)", "pod", name, "error", err.Error())
		}
	}()
}

// primaryLostAt says whether the primary's pod is lost (gone, terminating,
// or not ready) and since when.
func primaryLostAt(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	switch {
	case pod == nil:
		return now, true
	case !pod.DeletionTimestamp.IsZero():
		grace := int64(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		return pod.DeletionTimestamp.Add(-time.Duration(grace) * time.Second), true
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type != corev1.PodReady {
			continue
		}
		if cond.Status == corev1.ConditionTrue {
			return time.Time{}, false
		}
		if !cond.LastTransitionTime.IsZero() {
			return cond.LastTransitionTime.Time, true
		}
	}
	return pod.CreationTimestamp.Time, true
}

// chooseCandidate is the replica to promote: among the pods other than the
// lost primary whose instance answers as a replica with its users applied,
// the one whose data goes furthest; on a tie a ready one, then the lowest
// ordinal.
func chooseCandidate(engine dbpilotv1alpha1.Engine, pods []corev1.Pod, reports map[string]layout.InstanceStatus, lost string) string {
	type candidate struct {
		name     string
		position uint64
		ready    bool
	}
	var candidates []candidate
	for i := range pods {
		pod := &pods[i]
		report, ok := reports[pod.Name]
		if pod.Name == lost || !ok || !pod.DeletionTimestamp.IsZero() || report.Role != layout.RoleReplica || !report.CredentialsApplied || report.Fenced {
			continue
		}
		position, ok := positionRank(engine, report.Position)
		if !ok {
			continue
		}
		candidates = append(candidates, candidate{pod.Name, position, podReady(pod)})
	}
	if len(candidates) == 0 {
		return ""
	}
	best := slices.MinFunc(candidates, func(a, b candidate) int {
		switch {
		case a.position != b.position:
			return compare(b.position, a.position)
		case a.ready != b.ready:
			if a.ready {
				return -1
			}
			return 1
		}
		return compare(ordinalOf(a.name), ordinalOf(b.name))
	})
	return best.name
}

func compare[T int | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ordinalOf is the ordinal a pod name ends with.
func ordinalOf(name string) int {
	n, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
	return n
}

// positionRank orders the positions instances report: PostgreSQL's WAL
// position ("16/B374D848"), MariaDB's GTID position (the sum of the
// sequence numbers of "domain-server-seq" entries) and MySQL's GTID set
// (the number of transactions in "uuid:1-100:200-210" entries).
func positionRank(engine dbpilotv1alpha1.Engine, position string) (uint64, bool) {
	switch engine {
	case dbpilotv1alpha1.EnginePostgres:
		hi, lo, ok := strings.Cut(position, "/")
		h, err1 := strconv.ParseUint(hi, 16, 32)
		l, err2 := strconv.ParseUint(lo, 16, 32)
		return h<<32 | l, ok && err1 == nil && err2 == nil
	case dbpilotv1alpha1.EngineMariaDB:
		var sum uint64
		for _, gtid := range strings.Split(position, ",") {
			gtid = strings.TrimSpace(gtid)
			if gtid == "" {
				continue
			}
			parts := strings.Split(gtid, "-")
			seq, err := strconv.ParseUint(parts[len(parts)-1], 10, 64)
			if len(parts) != 3 || err != nil {
				return 0, false
			}
			sum += seq
		}
		return sum, true
	default:
		var sum uint64
		for _, set := range strings.Split(position, ",") {
			intervals := strings.Split(strings.TrimSpace(set), ":")
			for _, interval := range intervals[1:] {
				first, last, isRange := strings.Cut(interval, "-")
				a, err := strconv.ParseUint(first, 10, 64)
				if err != nil {
					return 0, false
				}
				b := a
				if isRange {
					if b, err = strconv.ParseUint(last, 10, 64); err != nil {
						return 0, false
					}
				}
				sum += b - a + 1
			}
		}
		return sum, true
	}
}

// podNamed is the pod of a name, or nil.
func podNamed(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

// designatedPrimary is the pod the pass knows as the designated primary:
// the designation's, or, when it was not read (a paused Database), the
// last reported primary or the pod of ordinal 0.
func designatedPrimary(s *scope) string {
	switch {
	case s.designation != nil:
		return s.designation.Primary
	case s.db.Status.CurrentPrimary != "":
		return s.db.Status.CurrentPrimary
	}
	return s.db.PrimaryPodName()
}

// failingOverCondition is the FailingOver condition of the pass: True
// while a failover is in progress (or cannot proceed), False with the
// outcome once it ended; nil keeps the stored one (none before the first
// failover).
func failingOverCondition(s *scope) *metav1.Condition {
	d := s.designation
	switch {
	case s.failoverProblem != "":
		return &metav1.Condition{Type: dbpilotv1alpha1.ConditionFailingOver, Status: metav1.ConditionTrue,
			Reason: dbpilotv1alpha1.ReasonNoCandidate, Message: s.failoverProblem}
	case d != nil && d.FormerPrimary != "":
		return &metav1.Condition{Type: dbpilotv1alpha1.ConditionFailingOver, Status: metav1.ConditionTrue,
			Reason:  dbpilotv1alpha1.ReasonPromoting,
			Message: fmt.Sprintf("Primary %s has not taken writes since %s (%s): promoting %s", d.FormerPrimary, d.PrimaryLostAt.UTC().Format(time.RFC3339), d.Reason, d.Primary)}
	case s.failoverSettled != "":
		return &metav1.Condition{Type: dbpilotv1alpha1.ConditionFailingOver, Status: metav1.ConditionFalse,
			Reason: dbpilotv1alpha1.ReasonPrimaryServing, Message: s.failoverSettled}
	case d != nil && meta.IsStatusConditionTrue(s.db.Status.Conditions, dbpilotv1alpha1.ConditionFailingOver):
		// The move ended, but a pass that read the designation before it
		// did wrote True again: the designation is the truth.
		return &metav1.Condition{Type: dbpilotv1alpha1.ConditionFailingOver, Status: metav1.ConditionFalse,
			Reason: dbpilotv1alpha1.ReasonPrimaryServing, Message: fmt.Sprintf("%s is the primary (epoch %d)", d.Primary, d.Epoch)}
	}
	return nil
}
