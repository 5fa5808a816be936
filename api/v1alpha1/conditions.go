package v1alpha1

// Condition types of a Database.
const (
	// ConditionAvailable is True when the primary accepts connections through
	// the read-write Service.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while dbpilot moves the Database towards
	// its spec (creating, scaling, rolling a tier or version change).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs a person: pods not ready
	// for long, invalid credentials, a failed step.
	ConditionDegraded = "Degraded"
	// ConditionAutopilotReady is True when the auto-pilot has fresh, complete
	// metrics to decide on.
	ConditionAutopilotReady = "AutopilotReady"
	// ConditionAnomalyDetected is True while throughput or connections are
	// far outside the Database's usual range.
	ConditionAnomalyDetected = "AnomalyDetected"
	// ConditionFailingOver is True from the moment dbpilot designates a
	// replica to replace a lost primary until the new primary serves
	// writes; its message then tells the last failover's outcome.
	ConditionFailingOver = "FailingOver"
	// ConditionBackupSucceeded is True when the newest finished backup
	// completed, False (with why) when it failed.
	ConditionBackupSucceeded = "BackupSucceeded"
	// ConditionContinuousArchiving is True while the primary archives its
	// WAL (PostgreSQL) or binary logs (MariaDB), False while archiving
	// fails.
	ConditionContinuousArchiving = "ContinuousArchiving"
)

// Condition reasons of a Database.
const (
	ReasonPrimaryReady          = "PrimaryReady"
	ReasonPrimaryNotReady       = "PrimaryNotReady"
	ReasonReplicasNotReady      = "ReplicasNotReady"
	ReasonCreating              = "Creating"
	ReasonScaling               = "Scaling"
	ReasonRollingUpdate         = "RollingUpdate"
	ReasonReconciled            = "Reconciled"
	ReasonPaused                = "Paused"
	ReasonCredentialsInvalid    = "CredentialsInvalid"
	ReasonReconcileFailed       = "ReconcileFailed"
	ReasonAsExpected            = "AsExpected"
	ReasonVolumeNotExpandable   = "VolumeNotExpandable"
	ReasonMetricsReady          = "MetricsReady"
	ReasonPrometheusUnavailable = "PrometheusUnavailable"
	ReasonWithinBaseline        = "WithinBaseline"
	ReasonOutsideBaseline       = "OutsideBaseline"
	ReasonPromoting             = "Promoting"
	ReasonPrimaryServing        = "PrimaryServing"
	ReasonNoCandidate           = "NoReplicaToPromote"
	ReasonBackupCompleted       = "BackupCompleted"
	ReasonBackupFailed          = "BackupFailed"
	ReasonNoBackupYet           = "NoBackupYet"
	ReasonArchiving             = "Archiving"
	ReasonArchivingFailing      = "ArchivingFailing"
	ReasonWaitingForBackup      = "WaitingForBackup"
	ReasonRestoreFailed         = "RestoreFailed"
	// ReasonWaitingForPredecessor: a deleted Database of the same name
	// still owns a child (its designation or a generated Secret) that
	// Kubernetes has not collected yet; nothing is created until it has.
	ReasonWaitingForPredecessor = "WaitingForPredecessor"
)

// ReasonServerCertificateInvalid: the Secret
// spec.tls.serverCertificateSecretName names is missing or unusable.
const ReasonServerCertificateInvalid = "ServerCertificateInvalid"

// ReasonClientCertificateInvalid: the application user's client
// certificate cannot be issued (its authority's Secret cannot sign, or
// its own Secret is not dbpilot's).
const ReasonClientCertificateInvalid = "ClientCertificateInvalid"

// ReasonParametersRefused (Degraded) says the server refuses a name or a
// value of spec.parameters, so its settings stay as they were.
const ReasonParametersRefused = "ParametersRefused"

// ReasonUsersInvalid (Degraded): a user of spec.users cannot be kept as
// written (one named as the application user, a Secret of its that lost
// its password); the message names the field. The other users are kept.
const ReasonUsersInvalid = "UsersInvalid"

// ReasonUsersRefused (Degraded): the primary's engine refuses a statement
// that keeps a user of spec.users; the message names the user and the
// engine's error, status.users too. It is retried; the other users are
// kept.
const ReasonUsersRefused = "UsersRefused"

// ReasonSchedulingInvalid (Degraded) says spec.scheduling names what does
// not exist (its PriorityClass), so no pod could be created: the
// StatefulSet keeps its former pods and template until it does.
const ReasonSchedulingInvalid = "SchedulingInvalid"

// ReasonServiceConflict (Degraded) says a Service spec.expose asks for has
// the name of a Service that is not the Database's, which dbpilot leaves
// alone.
const ReasonServiceConflict = "ServiceConflict"

// ReasonDraining (Progressing) says the primary's node is being drained
// and its pod waits there, its eviction refused by its budget, until a
// replica on another node can take over.
const ReasonDraining = "Draining"

// ReasonHibernating (Progressing) says spec.hibernate is true and pods
// still run; ReasonHibernated (Available, Progressing) says none does.
const (
	ReasonHibernating = "Hibernating"
	ReasonHibernated  = "Hibernated"
)

// EventReasonHibernating: spec.hibernate stops the pods;
// EventReasonResuming: spec.hibernate set back to false starts them.
const (
	EventReasonHibernating = "Hibernating"
	EventReasonResuming    = "Resuming"
)

// Event reasons recorded on a Database.
const (
	EventReasonScaled      = "Scaled"
	EventReasonTierChanged = "TierChanged"
	EventReasonUpgraded    = "Upgraded"
	// EventReasonRestartingForParameters: a setting of spec.parameters
	// waits for a restart, so the pods roll, primary-safe.
	EventReasonRestartingForParameters = "RestartingForParameters"
	EventReasonDegraded                = "Degraded"
	EventReasonVolumeRetained          = "VolumesRetained"
	EventReasonVolumeDeleted           = "VolumesDeleted"
	EventReasonAutopilot               = "Autopilot"
	EventReasonAnomaly                 = "Anomaly"
	// EventReasonRestarting: the pods restart for the Database's
	// AnnotationRestart.
	EventReasonRestarting = "Restarting"
	// EventReasonPodReplaced: a pod no node took, made from a template
	// that has changed since, is deleted so the StatefulSet makes it
	// again from the current one.
	EventReasonPodReplaced = "PodReplaced"
	// EventReasonCredentialsRegenerated: the generated credentials Secret
	// was deleted and generated anew.
	EventReasonCredentialsRegenerated = "CredentialsRegenerated"
	// EventReasonSlotsDropped: the primary dropped the replication slots of
	// replicas that no longer exist.
	EventReasonSlotsDropped = "ReplicationSlotsDropped"
	// EventReasonFailingOver: the primary was lost and a replica is being
	// promoted; EventReasonFailedOver: the new primary serves writes.
	EventReasonFailingOver = "FailingOver"
	EventReasonFailedOver  = "FailedOver"
	// EventReasonSwitchingOver: the primary hands over to a replica on
	// request (or before a scale down removes its pod);
	// EventReasonSwitchedOver: the new primary serves;
	// EventReasonSwitchoverRefused: the request named a replica that
	// cannot take over now.
	EventReasonSwitchingOver     = "SwitchingOver"
	EventReasonSwitchedOver      = "SwitchedOver"
	EventReasonSwitchoverRefused = "SwitchoverRefused"
	// EventReasonSwitchoverReverted: a switchover whose target missed the
	// end of the former primary's WAL (binary log) was abandoned, and the
	// former primary designated again.
	EventReasonSwitchoverReverted = "SwitchoverReverted"
	// EventReasonFenced and EventReasonUnfenced: an instance's engine was
	// stopped, or started again, by the dbpilot.io/fenced annotation.
	EventReasonFenced   = "Fenced"
	EventReasonUnfenced = "Unfenced"
	// Backups: a DatabaseBackup started, completed, failed, had its
	// artifacts deleted, or kept them when they could not be deleted.
	EventReasonBackupStarted   = "BackupStarted"
	EventReasonBackupCompleted = "BackupCompleted"
	EventReasonBackupFailed    = "BackupFailed"
	EventReasonBackupDeleted   = "BackupDeleted"
	EventReasonBackupRetained  = "BackupArtifactsKept"
	// EventReasonBackupScheduled: the schedule created a DatabaseBackup;
	// EventReasonBackupsPruned: retention deleted old ones.
	EventReasonBackupScheduled = "BackupScheduled"
	EventReasonBackupsPruned   = "BackupsPruned"
	// EventReasonRestoring: a new Database restores a backup.
	EventReasonRestoring = "Restoring"
	// EventReasonCertificateIssued: the server certificate was issued
	// again (renewed before its expiry, or its names changed).
	EventReasonCertificateIssued = "CertificateIssued"
	// EventReasonCertificateCopied: the user's server certificate
	// (spec.tls.serverCertificateSecretName) was copied to the pods'.
	EventReasonCertificateCopied = "CertificateCopied"
	// EventReasonClientCertificateIssued: the application user's client
	// certificate was issued again (renewed, or its Secret was missing).
	EventReasonClientCertificateIssued = "ClientCertificateIssued"
	// EventReasonClientCertificateAuthorityTrusted: the server certificate
	// Secret the pods mount took the client authority's certificate
	// (beside the former one's, when it was replaced; in its place, when
	// it is a renewed copy);
	// EventReasonClientCertificateAuthorityRetired: the former client
	// authority was dropped, a while after the application user's
	// certificate was issued from the new one.
	EventReasonClientCertificateAuthorityTrusted = "ClientCertificateAuthorityTrusted"
	EventReasonClientCertificateAuthorityRetired = "ClientCertificateAuthorityRetired"
	// EventReasonCertificateAuthorityAdded: a new certificate's
	// authorities were added beside the former ones, before the pods
	// serve it (a renewed copy of the authority: in place of the former);
	// EventReasonCertificateAuthorityRetired: the former ones were
	// dropped once every pod served it;
	// EventReasonCertificateStagingTimedOut: pods did not report the
	// step before mounted in time, and the change went on without them.
	EventReasonCertificateAuthorityAdded   = "CertificateAuthorityAdded"
	EventReasonCertificateAuthorityRetired = "CertificateAuthorityRetired"
	EventReasonCertificateStagingTimedOut  = "CertificateStagingTimedOut"
	// EventReasonCertificateAuthorityRenewed: dbpilot's own authority of
	// the server certificate was issued again with its key, a year before
	// it expired; EventReasonClientCertificateAuthorityRenewed: so was its
	// own authority of the client certificates.
	// EventReasonCertificateAuthorityRenewalFailed (Warning): renewing one
	// failed; it serves as it is meanwhile.
	EventReasonCertificateAuthorityRenewed       = "CertificateAuthorityRenewed"
	EventReasonClientCertificateAuthorityRenewed = "ClientCertificateAuthorityRenewed"
	EventReasonCertificateAuthorityRenewalFailed = "CertificateAuthorityRenewalFailed"
)

// EventReasonUserRemoved: a user spec.users no longer lists was locked.
const EventReasonUserRemoved = "UserRemoved"

// EventReasonUserExpired: the primary locked a user of spec.users whose
// validUntil came.
const EventReasonUserExpired = "UserExpired"
