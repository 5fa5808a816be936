package controllers

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/designation"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// scope is what one reconcile pass knows about a Database and its world.
// Phases fill it in; the status is rebuilt from it at the end.
type scope struct {
	db *dbpilotv1alpha1.Database

	// statefulSet is the StatefulSet as last read or applied; nil if absent.
	statefulSet *appsv1.StatefulSet
	// pods are the Database's pods.
	pods []corev1.Pod
	// credentialsProblem says what is wrong with the credentials Secret, in
	// words safe to show (key names, never values); empty when fine.
	credentialsProblem string
	// applicationUser is the application user's name, from the
	// credentials Secret; empty when it cannot be read.
	applicationUser string
	// clientAuthority is the authority of the Database's client
	// certificates; zero until read, and while it cannot be
	// (clientCertificateProblem).
	clientAuthority pki.KeyPair
	// clientAuthorities are the client authorities' certificates the
	// server certificate Secret holds, which the engines verify client
	// certificates with: every write of that Secret keeps them (or gives
	// it clientAuthority when it holds none), and only
	// stageClientAuthority changes them.
	clientAuthorities []byte
	// clientAuthorityTrusted: every pod's engine verifies client
	// certificates with clientAuthority (or is not waited for), so the
	// application user's certificate may be issued from it.
	clientAuthorityTrusted bool
	// clientCertificateProblem says why the application user's client
	// certificate cannot be issued, in words safe to show; empty when
	// fine.
	clientCertificateProblem string
	// usersProblem says which user of spec.users cannot be kept as
	// written, naming the field; empty when fine.
	usersProblem string
	// users is what the pass knows of spec.users, once usersObserved is
	// true (reconcileUsers ran).
	users         usersSeen
	usersObserved bool
	// tlsProblem says what is wrong with the user's server certificate
	// Secret, in words safe to show; empty when fine.
	tlsProblem string
	// volumeProblem says why a volume could not grow; empty when fine.
	volumeProblem string
	// schedulingProblem says what of spec.scheduling does not exist; the
	// StatefulSet is left as it is while it is set.
	schedulingProblem string
	// exposeProblem says why a Service spec.expose asks for cannot be
	// written (a Service of the user's has its name); empty when fine.
	exposeProblem string
	// statefulSetWritten is the generation this pass's write gave the
	// StatefulSet, 0 without a write: the cached copy read afterwards may
	// still be older.
	statefulSetWritten int64
	// observed is set once statefulSet and pods have been read.
	observed bool
	// replicas is the number of pods the StatefulSet runs: the effective
	// replicas, or more while a rollout keeps pods it will remove. Set by
	// the StatefulSet phase; the Services and the budget follow it.
	replicas int32
	// instances are what the pods' instance programs report, by pod name;
	// a pod that did not answer is missing.
	instances map[string]layout.InstanceStatus
	// instanceAuthority is the authority's certificate the instance
	// programs that serve HTTPS are verified against; read with the pods.
	instanceAuthority []byte
	// designation is the designated primary; nil until read.
	designation *designation.Designation
	// failoverProblem says why a lost primary cannot be replaced; empty
	// when it can, or is not lost.
	failoverProblem string
	// failoverSettled tells the outcome of a failover that ended this pass.
	failoverSettled string
	// hibernationHold says why a hibernating Database's pods do not stop
	// yet; "" when they stop, or when it does not hibernate.
	hibernationHold string
	// resizeHeld says why a lone pod whose in-place resize was refused
	// runs on at its tier (holdRefusedResize); empty when none is held.
	resizeHeld string
	// drainingNodes tells, by name, which of the pods' nodes are being
	// emptied; read by the switchover phase.
	drainingNodes map[string]bool
	// drainWait says why the primary's pod stays on drainWaitNode, a
	// node being drained (its budget refuses the eviction); both empty
	// when it does not.
	drainWait, drainWaitNode string
	// rolloutHandover is the pod a rollout needs the primary handed over
	// to before it restarts the primary's pod; empty when none.
	rolloutHandover string
	// backups are the Database's DatabaseBackups, and nextBackup the next
	// scheduled run; nil without spec.backup.
	backups    []dbpilotv1alpha1.DatabaseBackup
	nextBackup *time.Time
	// backupProblem says what stops backups; empty when nothing does.
	backupProblem string
	// predecessorPending names a child a deleted Database of the same
	// name still owns; nothing is created until it is gone.
	predecessorPending string
	// restoreProblem says why the restore source cannot be resolved yet:
	// no pod is created until it is.
	restoreProblem string
}

// instanceTarget is how the pod's instance program is reached.
func (s *scope) instanceTarget(pod *corev1.Pod) instanceTarget {
	return instanceTargetOf(s.db, s.instanceAuthority, pod)
}
