package controllers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// observation is what the status is built from: the world as one pass saw
// it, and what went wrong.
type observation struct {
	statefulSet *appsv1.StatefulSet
	// exposed are the Services of spec.expose, by name (exposedServices).
	exposed map[string]*corev1.Service
	// statefulSetWritten is the generation the pass's write gave the
	// StatefulSet (0 without one); a cached statefulSet may be older.
	statefulSetWritten int64
	pods               []corev1.Pod
	credentialsProblem string
	usersProblem       string
	// users is what the pass knows of spec.users; usersObserved is false
	// when it did not look, which keeps the stored status.users.
	users         usersSeen
	usersObserved bool
	// usersRefusal says which users status.users tells the primary
	// refuses (usersRefusal).
	usersRefusal string
	tlsProblem   string
	// clientCertificateProblem says why the application user's client
	// certificate cannot be issued.
	clientCertificateProblem string
	volumeProblem            string
	schedulingProblem        string
	exposeProblem            string
	// hibernationHold says why a hibernating Database's pods do not
	// stop yet.
	hibernationHold string
	// resizeHeld says why a lone pod's refused resize holds the pods as
	// they are.
	resizeHeld string
	// drainWait says why the primary's pod waits on a node being
	// drained.
	drainWait string
	// predecessorPending names a child a deleted Database of the same
	// name still owns.
	predecessorPending string
	// reconcileErr is the error the pass ended with; the observed
	// generation moves only without one.
	reconcileErr error
	// degradingErr is reconcileErr when it should show as Degraded (see
	// failures.degrading).
	degradingErr error
	// instances are the instance programs' reports, by pod name.
	instances map[string]layout.InstanceStatus
	// primary is the designated primary's pod name.
	primary string
	// failingOver is the FailingOver condition this pass sets; nil keeps
	// the stored one.
	failingOver *metav1.Condition
	// backup is what the pass saw of backups; backupObserved is false when
	// it did not look (paused), which keeps the stored status.backup.
	backup         backupObservation
	backupObserved bool
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// primaryPod returns the primary pod, or nil.
func primaryPod(name string, pods []corev1.Pod) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name && pods[i].DeletionTimestamp.IsZero() {
			return &pods[i]
		}
	}
	return nil
}

// updating reports whether the StatefulSet controller is still moving pods
// to the newest revision.
func updating(status appsv1.StatefulSetStatus) bool {
	return status.CurrentRevision != status.UpdateRevision || status.UpdatedReplicas < status.Replicas
}

// rolling reports whether the StatefulSet is still moving towards its spec,
// with the reason and a message. written is the generation this pass wrote
// (0 for none): a cached StatefulSet older than that has not yet shown the
// write, and its status says nothing of the new spec.
func rolling(db *dbpilotv1alpha1.Database, sts *appsv1.StatefulSet, written int64) (bool, string, string) {
	if sts == nil {
		return true, dbpilotv1alpha1.ReasonCreating, "Creating the StatefulSet"
	}
	status := sts.Status
	want := db.EffectiveReplicas()
	switch {
	case status.ObservedGeneration < max(sts.Generation, written):
		return true, dbpilotv1alpha1.ReasonRollingUpdate, "Waiting for the StatefulSet controller to observe the new spec"
	case updating(status):
		return true, dbpilotv1alpha1.ReasonRollingUpdate, fmt.Sprintf("Rolling pods to the new spec, replicas first: %d/%d updated", status.UpdatedReplicas, status.Replicas)
	case status.Replicas != want || status.ReadyReplicas < want:
		if status.ReadyReplicas == 0 {
			return true, dbpilotv1alpha1.ReasonCreating, fmt.Sprintf("Starting pods: 0/%d ready", want)
		}
		return true, dbpilotv1alpha1.ReasonScaling, fmt.Sprintf("Scaling to %d pods: %d exist, %d ready", want, status.Replicas, status.ReadyReplicas)
	}
	return false, dbpilotv1alpha1.ReasonReconciled, fmt.Sprintf("All %d pods run the current spec", want)
}

// notReadyTooLong is how long a pod may stay not ready before the Database
// is Degraded rather than still starting.
const notReadyTooLong = 5 * time.Minute

// stuckPods names the pods that have not been ready for notReadyTooLong.
func stuckPods(pods []corev1.Pod, now time.Time) []string {
	var stuck []string
	for i := range pods {
		pod := &pods[i]
		if podReady(pod) || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		since := pod.CreationTimestamp.Time
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && !cond.LastTransitionTime.IsZero() {
				since = cond.LastTransitionTime.Time
			}
		}
		if now.Sub(since) >= notReadyTooLong {
			stuck = append(stuck, pod.Name)
		}
	}
	return stuck
}

// buildConditions sets Available, Progressing and Degraded on a copy of
// current from the observation. A condition whose status does not change
// keeps its lastTransitionTime; a changed one gets now.
func buildConditions(db *dbpilotv1alpha1.Database, obs observation, current []metav1.Condition, now metav1.Time) []metav1.Condition {
	conditions := ownConditions(current)
	set := func(condType string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&conditions, metav1.Condition{
			Type: condType, Status: status, Reason: reason, Message: message,
			ObservedGeneration: db.Generation, LastTransitionTime: now,
		})
	}

	primary := primaryPod(obs.primary, obs.pods)
	switch {
	case db.Spec.Hibernate && len(obs.pods) == 0:
		set(dbpilotv1alpha1.ConditionAvailable, metav1.ConditionFalse, dbpilotv1alpha1.ReasonHibernated,
			"spec.hibernate is true: no pod runs; setting it to false starts them again")
	case primary != nil && podReady(primary):
		set(dbpilotv1alpha1.ConditionAvailable, metav1.ConditionTrue, dbpilotv1alpha1.ReasonPrimaryReady,
			fmt.Sprintf("Primary %s accepts connections through %s", primary.Name, db.ReadWriteServiceName()))
	default:
		set(dbpilotv1alpha1.ConditionAvailable, metav1.ConditionFalse, dbpilotv1alpha1.ReasonPrimaryNotReady,
			fmt.Sprintf("Primary %s is not ready", obs.primary))
	}

	isRolling, reason, message := rolling(db, obs.statefulSet, obs.statefulSetWritten)
	switch {
	case db.Spec.Paused:
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionFalse, dbpilotv1alpha1.ReasonPaused,
			"spec.paused is true: dbpilot changes nothing until it is set to false")
	case db.Spec.Hibernate:
		reason, message := hibernationProgress(obs.hibernationHold, len(obs.pods))
		status := metav1.ConditionTrue
		if reason == dbpilotv1alpha1.ReasonHibernated {
			status = metav1.ConditionFalse
		}
		set(dbpilotv1alpha1.ConditionProgressing, status, reason, message)
	case isRolling:
		if why := unscheduled(obs.pods); len(why) > 0 {
			message += "; the scheduler cannot place " + strings.Join(why, "; ")
		}
		if obs.resizeHeld != "" {
			message += "; " + obs.resizeHeld
		}
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	default:
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, message)
	}

	if obs.drainWait != "" && !db.Spec.Paused {
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionTrue, dbpilotv1alpha1.ReasonDraining, obs.drainWait)
	}
	if obs.predecessorPending != "" {
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionTrue, dbpilotv1alpha1.ReasonWaitingForPredecessor, obs.predecessorPending)
	}
	if obs.backup.restoreProblem != "" {
		set(dbpilotv1alpha1.ConditionProgressing, metav1.ConditionTrue, dbpilotv1alpha1.ReasonWaitingForBackup, obs.backup.restoreProblem)
	}
	if db.Spec.Backup == nil {
		meta.RemoveStatusCondition(&conditions, dbpilotv1alpha1.ConditionBackupSucceeded)
		meta.RemoveStatusCondition(&conditions, dbpilotv1alpha1.ConditionContinuousArchiving)
	} else if obs.backupObserved {
		backupConditions(db, obs.backup, set)
	}

	switch {
	case obs.credentialsProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonCredentialsInvalid, obs.credentialsProblem)
	case obs.usersProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonUsersInvalid, obs.usersProblem)
	case obs.tlsProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonServerCertificateInvalid, obs.tlsProblem)
	case obs.clientCertificateProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonClientCertificateInvalid, obs.clientCertificateProblem)
	case parametersRefusal(obs.instances) != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonParametersRefused, parametersRefusal(obs.instances))
	case obs.usersRefusal != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonUsersRefused, obs.usersRefusal)
	case obs.backup.restoreFailure != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonRestoreFailed, obs.backup.restoreFailure)
	case obs.degradingErr != nil:
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonReconcileFailed, obs.degradingErr.Error())
	case obs.schedulingProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonSchedulingInvalid, obs.schedulingProblem)
	case obs.exposeProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonServiceConflict, obs.exposeProblem)
	case obs.volumeProblem != "":
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonVolumeNotExpandable, obs.volumeProblem)
	case len(stuckPods(obs.pods, now.Time)) > 0:
		message := fmt.Sprintf("Pods not ready for more than %s: %s", notReadyTooLong, strings.Join(stuckPods(obs.pods, now.Time), ", "))
		if why := unscheduled(obs.pods); len(why) > 0 {
			message += "; the scheduler cannot place " + strings.Join(why, "; ")
		}
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionTrue, dbpilotv1alpha1.ReasonReplicasNotReady, message)
	default:
		set(dbpilotv1alpha1.ConditionDegraded, metav1.ConditionFalse, dbpilotv1alpha1.ReasonAsExpected, "Nothing needs attention")
	}
	return conditions
}

// phaseOf summarises the conditions in one word for `kubectl get`.
func phaseOf(db *dbpilotv1alpha1.Database, conditions []metav1.Condition) dbpilotv1alpha1.Phase {
	degraded := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionDegraded)
	switch {
	case db.Spec.Paused:
		return dbpilotv1alpha1.PhasePaused
	case degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.Reason == dbpilotv1alpha1.ReasonCredentialsInvalid:
		return dbpilotv1alpha1.PhaseFailed
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		return dbpilotv1alpha1.PhaseDegraded
	case db.Spec.Hibernate && meta.IsStatusConditionTrue(conditions, dbpilotv1alpha1.ConditionProgressing):
		return dbpilotv1alpha1.PhaseHibernating
	case db.Spec.Hibernate:
		return dbpilotv1alpha1.PhaseHibernated
	case !meta.IsStatusConditionTrue(conditions, dbpilotv1alpha1.ConditionAvailable):
		return dbpilotv1alpha1.PhaseProvisioning
	case meta.IsStatusConditionTrue(conditions, dbpilotv1alpha1.ConditionProgressing):
		return dbpilotv1alpha1.PhaseUpdating
	}
	return dbpilotv1alpha1.PhaseRunning
}
