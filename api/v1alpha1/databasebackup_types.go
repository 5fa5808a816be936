package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseBackup is one base backup of a Database, taken once: on demand,
// or by the Database's spec.backup.schedule. It reports its phase and the
// artifact it wrote; a Database restores from it with
// spec.bootstrap.fromBackup.databaseBackupName.
// +operator-sdk:csv:customresourcedefinitions:displayName="Database Backup",resources={{Pod,v1,""}}
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dbb,categories=all
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.spec.databaseName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Instance",type=string,JSONPath=`.status.instance`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DatabaseBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which Database to back up.
	// +required
	Spec DatabaseBackupSpec `json:"spec"`

	// status reports the backup, written by dbpilot.
	// +optional
	Status DatabaseBackupStatus `json:"status,omitempty"`
}

// DatabaseBackupList is a list of DatabaseBackups.
// +kubebuilder:object:root=true
type DatabaseBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DatabaseBackup `json:"items"`
}

// DatabaseBackupSpec says which Database to back up.
// +kubebuilder:validation:XValidation:rule="self.databaseName == oldSelf.databaseName",message="spec.databaseName is immutable: create another DatabaseBackup"
type DatabaseBackupSpec struct {
	// databaseName names the Database, in the same namespace, to back up.
	// It must have spec.backup, which says where backups go.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Database",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	DatabaseName string `json:"databaseName"`

	// deletionPolicy says what deleting this DatabaseBackup does to the
	// backup it wrote: Retain (the default for backups created by hand)
	// keeps the artifacts in the destination; Delete removes them, and the
	// archived WAL no remaining backup needs. Scheduled backups use Delete,
	// so retention frees their space.
	// +optional
	// +kubebuilder:default=Retain
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Retain","urn:alm:descriptor:com.tectonic.ui:select:Delete"}
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// BackupPhase is where a DatabaseBackup stands.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

// Phases of a DatabaseBackup.
const (
	BackupPhasePending   BackupPhase = "Pending"
	BackupPhaseRunning   BackupPhase = "Running"
	BackupPhaseCompleted BackupPhase = "Completed"
	BackupPhaseFailed    BackupPhase = "Failed"
)

// DatabaseBackupStatus reports a backup.
type DatabaseBackupStatus struct {
	// phase is Pending, Running, Completed or Failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase BackupPhase `json:"phase,omitempty"`

	// message says why a backup failed, or what a pending one waits for.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`

	// engine is the Database's engine.
	// +optional
	Engine Engine `json:"engine,omitempty"`

	// instance is the pod that took the backup.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Instance",xDescriptors={"urn:alm:descriptor:io.kubernetes:Pod"}
	Instance string `json:"instance,omitempty"`

	// backupName is the backup's name in the destination.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backup Name",xDescriptors={"urn:alm:descriptor:text"}
	BackupName string `json:"backupName,omitempty"`

	// destination is where the backup was written, its prefix resolved, so
	// it can be restored after the Database is gone.
	// +optional
	Destination *BackupDestination `json:"destination,omitempty"`

	// startTime is when the run started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the run ended, completed or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// size is the stored (compressed) size of the artifacts.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Size",xDescriptors={"urn:alm:descriptor:text"}
	Size *resource.Quantity `json:"size,omitempty"`

	// dataSize is the size of the data before compression.
	// +optional
	DataSize *resource.Quantity `json:"dataSize,omitempty"`

	// engineVersion is the server version the backup was taken from; it
	// restores only into that major version.
	// +optional
	EngineVersion string `json:"engineVersion,omitempty"`

	// startPosition is where the backup starts in the WAL (PostgreSQL
	// LSN) or binlog (GTID).
	// +optional
	StartPosition string `json:"startPosition,omitempty"`
	// endPosition is where the backup becomes consistent in the WAL
	// (PostgreSQL LSN) or binlog (GTID): a restore replays at least to it.
	// +optional
	EndPosition string `json:"endPosition,omitempty"`

	// checksum is the SHA-256 of the backup's artifact.
	// +optional
	Checksum string `json:"checksum,omitempty"`
}
