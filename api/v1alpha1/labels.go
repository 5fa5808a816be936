package v1alpha1

// Labels, annotations and the finalizer dbpilot puts on the objects it manages.
const (
	// LabelName is the engine, as app.kubernetes.io/name.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is the Database's name, as app.kubernetes.io/instance.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy marks objects that dbpilot manages.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelComponent is "database" on the pods' objects.
	LabelComponent = "app.kubernetes.io/component"
	// LabelDatabase is the Database's name; the selector of every child.
	LabelDatabase = "dbpilot.io/database"
	// LabelRole is "primary", "replica" or "fenced" on pods; the Services
	// select on it.
	LabelRole = "dbpilot.io/role"
	// LabelRetainedFrom marks a PersistentVolumeClaim kept after its Database
	// was deleted with deletionPolicy Retain; the value is the Database's name.
	LabelRetainedFrom = "dbpilot.io/retained-from"

	// LabelUser is on the Secret of a user of spec.users: the user's
	// name.
	LabelUser = "dbpilot.io/user"

	// AnnotationConfigChecksum on the pod template is the checksum of the
	// engine configuration, so a configuration change rolls the pods.
	AnnotationConfigChecksum = "dbpilot.io/config-checksum"
	// AnnotationSwitchoverTo on a Database asks dbpilot to hand the primary
	// over to the named pod, a streaming replica less than 5 s behind:
	// `kubectl annotate db orders dbpilot.io/switchover-to=orders-2`.
	// dbpilot removes it once the switchover is done, or refused (a
	// Warning Event says why).
	AnnotationSwitchoverTo = "dbpilot.io/switchover-to"
	// AnnotationFenced fences instances for investigation: their engine is
	// stopped cleanly and they leave both Services, and nothing is deleted;
	// a fenced primary is not failed over. On a Database it names the pods,
	// comma-separated, or "*" for all; on a pod, "true" fences it. Removing
	// it starts the engine again.
	AnnotationFenced = "dbpilot.io/fenced"
	// AnnotationRestart on a Database asks dbpilot to restart every pod,
	// primary-safe: the replicas first, then the primary after a
	// switchover to an updated replica (a lone pod simply restarts). Any
	// value; a new one restarts them again, and removing it restarts
	// nothing: `kubectl annotate db orders dbpilot.io/restart="$(date
	// -Is)" --overwrite`. The pods carry the value they restarted for
	// under the same key.
	AnnotationRestart = "dbpilot.io/restart"

	// LabelScheduled is "true" on the DatabaseBackups a schedule created,
	// which retention prunes.
	LabelScheduled = "dbpilot.io/scheduled"
	// AnnotationRestoreSource on a Database restored from a backup is the
	// backup it restores, resolved once (JSON of RestoreSource), so the pods
	// do not change when the DatabaseBackup named is deleted later.
	AnnotationRestoreSource = "dbpilot.io/restore-source"

	// BackupFinalizer holds a DatabaseBackup until its artifacts are dealt
	// with according to its deletionPolicy.
	BackupFinalizer = "dbpilot.io/backup-finalizer"

	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "dbpilot"
	// ComponentDatabase is the value of LabelComponent.
	ComponentDatabase = "database"
	// RolePrimary and RoleReplica are the values of LabelRole.
	RolePrimary = "primary"
	RoleReplica = "replica"
	// RoleFenced labels a fenced pod, which no Service selects.
	RoleFenced = "fenced"

	// Finalizer holds a Database until its volumes are dealt with according to
	// its deletionPolicy.
	Finalizer = "dbpilot.io/finalizer"
)
