package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is a one-word summary of a Database for `kubectl get`; the conditions
// are the truth.
type Phase string

// The phases.
const (
	PhaseProvisioning Phase = "Provisioning"
	PhaseRunning      Phase = "Running"
	PhaseUpdating     Phase = "Updating"
	PhaseDegraded     Phase = "Degraded"
	PhasePaused       Phase = "Paused"
	PhaseFailed       Phase = "Failed"
	// PhaseHibernating: spec.hibernate is true and pods still run (the
	// primary moving to ordinal 0, a backup finishing, pods stopping).
	PhaseHibernating Phase = "Hibernating"
	// PhaseHibernated: spec.hibernate is true and no pod runs.
	PhaseHibernated Phase = "Hibernated"
)

// DatabaseStatus is the observed state of a Database, rebuilt from the world
// on every reconcile.
type DatabaseStatus struct {
	// observedGeneration is the spec generation that the last successful
	// reconcile acted on.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the conditions in one word.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase Phase `json:"phase,omitempty"`

	// conditions are Available, Progressing and Degraded (and, with the
	// auto-pilot on, AutopilotReady), each with a reason a user can act on.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// replicas is the number of pods that exist.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pods",xDescriptors={"urn:alm:descriptor:podCount"}
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of pods that are ready.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Pods",xDescriptors={"urn:alm:descriptor:podCount"}
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// ready is readyReplicas/desired replicas, for `kubectl get`.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready",xDescriptors={"urn:alm:descriptor:text"}
	Ready string `json:"ready,omitempty"`

	// selector is the label selector of the Database's pods, for the scale
	// subresource (HPA, KEDA).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pod Selector",xDescriptors={"urn:alm:descriptor:selector:core:v1:Pod"}
	Selector string `json:"selector,omitempty"`

	// tier is the tier the pods run with now.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Tier",xDescriptors={"urn:alm:descriptor:text"}
	Tier Tier `json:"tier,omitempty"`

	// version is the engine version the pods run now.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Version",xDescriptors={"urn:alm:descriptor:text"}
	Version string `json:"version,omitempty"`

	// endpoints are the Services that clients connect to.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Endpoints",xDescriptors={"urn:alm:descriptor:text"}
	Endpoints *Endpoints `json:"endpoints,omitempty"`

	// credentialsSecret names the Secret holding the credentials.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Credentials Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// backup reports on backups.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backups",xDescriptors={"urn:alm:descriptor:text"}
	Backup *BackupStatus `json:"backup,omitempty"`

	// currentPrimary is the pod whose instance reports itself the primary.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Primary",xDescriptors={"urn:alm:descriptor:text"}
	CurrentPrimary string `json:"currentPrimary,omitempty"`

	// instances are the Database's pods and what their instance programs
	// report: role, readiness and whether a replica replicates.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Instances",xDescriptors={"urn:alm:descriptor:text"}
	Instances []InstanceStatus `json:"instances,omitempty"`

	// users are the users of spec.users, and those removed from it, as
	// the primary last reported keeping them: Ready once it holds a user
	// with its access and its Secret's password.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Users",xDescriptors={"urn:alm:descriptor:text"}
	Users []UserStatus `json:"users,omitempty"`

	// autopilot reports the auto-pilot's latest decision.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Auto-pilot",xDescriptors={"urn:alm:descriptor:text"}
	Autopilot *AutopilotStatus `json:"autopilot,omitempty"`
}

// InstanceStatus is one pod of a Database as its instance program reports
// it.
type InstanceStatus struct {
	// name is the pod's name.
	// +required
	Name string `json:"name"`

	// role is primary or replica, as the instance reports it; empty while it
	// does not answer.
	// +optional
	Role string `json:"role,omitempty"`

	// ready is the pod's readiness: the engine takes sessions with the
	// credentials applied and, on a replica, replicates.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// replicating is true while a replica receives from its primary.
	// +optional
	Replicating bool `json:"replicating,omitempty"`

	// lagSeconds is how far a replica is behind its primary, in whole
	// seconds, as it reported on the operator's last look (every 30 s);
	// unset on a primary. The precise position and lag are in the
	// instance's /status.
	// +optional
	LagSeconds *int64 `json:"lagSeconds,omitempty"`

	// fenced is true while the dbpilot.io/fenced annotation fences the
	// instance: its engine is stopped and no Service reaches it.
	// +optional
	Fenced bool `json:"fenced,omitempty"`

	// pendingRestart names the engine settings the instance takes only at
	// its next restart: after a PostgreSQL pod grew in place to a bigger
	// tier, shared_buffers and max_connections stay at the smaller tier's
	// until the pod restarts (a smaller tier always rolls the pods).
	// +optional
	// +listType=atomic
	PendingRestart []string `json:"pendingRestart,omitempty"`
}

// Endpoints are the in-cluster addresses of a Database.
type Endpoints struct {
	// readWrite is host:port of the primary.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Read-write Endpoint",xDescriptors={"urn:alm:descriptor:text"}
	ReadWrite string `json:"readWrite,omitempty"`

	// readOnly is host:port of the replicas (the primary when there are none).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Read-only Endpoint",xDescriptors={"urn:alm:descriptor:text"}
	ReadOnly string `json:"readOnly,omitempty"`

	// externalReadWrite is where clients outside the cluster reach the
	// primary: the Service of spec.expose.readWrite.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="External Read-write Endpoint",xDescriptors={"urn:alm:descriptor:text"}
	ExternalReadWrite *ExternalEndpoint `json:"externalReadWrite,omitempty"`

	// externalReadOnly is where clients outside the cluster reach the
	// replicas: the Service of spec.expose.readOnly.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="External Read-only Endpoint",xDescriptors={"urn:alm:descriptor:text"}
	ExternalReadOnly *ExternalEndpoint `json:"externalReadOnly,omitempty"`
}

// ExternalEndpoint is where clients outside the cluster reach a Service of
// spec.expose.
type ExternalEndpoint struct {
	// service names the Service.
	Service string `json:"service"`

	// type is the Service's type: LoadBalancer or NodePort.
	Type corev1.ServiceType `json:"type"`

	// address is host:port of the load balancer (the engine's port), once
	// the cluster's load balancer controller has given the Service one;
	// empty for a NodePort Service, and while a load balancer is pending.
	// +optional
	Address string `json:"address,omitempty"`

	// nodePort is the port on every node that forwards to the Service; 0
	// until the API server has allocated it, or when a LoadBalancer
	// Service allocates none.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`
}

// BackupStatus reports on backups.
type BackupStatus struct {
	// lastScheduleTime is when the last scheduled backup was started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// lastSuccessfulTime is when the last successful backup finished.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// running names the DatabaseBackup in progress; the auto-pilot holds
	// while one runs.
	// +optional
	Running string `json:"running,omitempty"`

	// nextScheduleTime is when the next scheduled backup starts.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessful is the newest backup that completed.
	// +optional
	LastSuccessful *BackupRun `json:"lastSuccessful,omitempty"`

	// lastFailed is the newest backup that failed.
	// +optional
	LastFailed *BackupRun `json:"lastFailed,omitempty"`

	// firstRecoverabilityPoint is the earliest instant a restore can reach:
	// the end of the oldest completed backup.
	// +optional
	FirstRecoverabilityPoint *metav1.Time `json:"firstRecoverabilityPoint,omitempty"`

	// lastRecoverabilityPoint is the latest instant a restore can reach:
	// the newest archived WAL or binary log, or the end of the newest
	// backup.
	// +optional
	LastRecoverabilityPoint *metav1.Time `json:"lastRecoverabilityPoint,omitempty"`

	// walArchive reports the primary's continuous archiving of its WAL
	// (PostgreSQL) or binary logs (MariaDB).
	// +optional
	WALArchive *WALArchiveStatus `json:"walArchive,omitempty"`
}

// BackupRun is one backup's outcome.
type BackupRun struct {
	// name is the DatabaseBackup's name.
	Name string `json:"name"`
	// time is when it finished.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// size is the stored size of its artifacts.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// durationSeconds is how long it ran.
	// +optional
	DurationSeconds int64 `json:"durationSeconds,omitempty"`
	// message says why a failed backup failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// WALArchiveStatus is how the primary's WAL archiving goes.
type WALArchiveStatus struct {
	// lastArchivedWAL names the newest archived WAL segment (MariaDB: its
	// binary log, prefixed with the server's id).
	// +optional
	LastArchivedWAL string `json:"lastArchivedWAL,omitempty"`
	// lastArchivedTime is when it was archived.
	// +optional
	LastArchivedTime *metav1.Time `json:"lastArchivedTime,omitempty"`
	// lastFailedWAL names the newest segment whose archiving failed; it is
	// retried until it succeeds, and the primary keeps it meanwhile.
	// +optional
	LastFailedWAL string `json:"lastFailedWAL,omitempty"`
	// lastFailedTime is when that failure happened.
	// +optional
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`
}
