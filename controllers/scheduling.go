package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/priorityclass"
)

// schedulingPoll is how often a Database whose PriorityClass is missing
// looks again: PriorityClasses are not watched.
const schedulingPoll = 30 * time.Second

// schedulingProblem says what of spec.scheduling cannot work, in words
// that name the field; empty when nothing. A pod naming a PriorityClass
// that does not exist is refused by the API server: applying such a
// template would take each pod a roll recreates away for good.
func (r *DatabaseReconciler) schedulingProblem(ctx context.Context, db *dbpilotv1alpha1.Database) (string, error) {
	if db.Spec.Scheduling == nil || db.Spec.Scheduling.PriorityClassName == "" {
		return "", nil
	}
	name := db.Spec.Scheduling.PriorityClassName
	exists, err := priorityclass.Exists(ctx, r.Client, name)
	if err != nil {
		return "", fmt.Errorf("reading PriorityClass %s: %w", name, err)
	}
	if !exists {
		return fmt.Sprintf("spec.scheduling.priorityClassName: PriorityClass %s does not exist; the pods keep their former spec until it does", name), nil
	}
	return "", nil
}

// schedulerRefusal is the pod's PodScheduled condition when the scheduler
// could not place it.
func schedulerRefusal(pod *corev1.Pod) (corev1.PodCondition, bool) {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return cond, true
		}
	}
	return corev1.PodCondition{}, false
}

// unscheduled says, for each pod the scheduler could not place, why in
// its own words ("orders-2: 0/3 nodes are available: ..."), by pod name.
func unscheduled(pods []corev1.Pod) []string {
	var why []string
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if refusal, ok := schedulerRefusal(pod); ok {
			why = append(why, pod.Name+": "+strings.TrimSpace(refusal.Message))
		}
	}
	sort.Strings(why)
	return why
}
