package layout

import "time"

// Backups: where a pod finds its backup destination and, when it is restored,
// its source.
const (
	// BackupTargetEnv holds the Database's backup destination as a
	// BackupTarget in JSON. The engine's children inherit it, so the WAL
	// archiving subcommand PostgreSQL runs finds it too. Unset: no backups.
	BackupTargetEnv = "DBPILOT_BACKUP_TARGET"
	// RestoreSourceEnv holds, for a Database bootstrapped from a backup, a
	// RestoreSource in JSON.
	RestoreSourceEnv = "DBPILOT_RESTORE_SOURCE"
	// BackupCredentialsDir holds the backup destination's credentials
	// Secret as files (KeyAccessKeyID, KeySecretAccessKey, KeyCA).
	BackupCredentialsDir = "/dbpilot/backup-credentials"
	// BackupVolumeDir is where a volume destination's claim is mounted.
	BackupVolumeDir = "/dbpilot/backup-volume"
	// RestoreCredentialsDir and RestoreVolumeDir are the same for the
	// restore source.
	RestoreCredentialsDir = "/dbpilot/restore-credentials"
	RestoreVolumeDir      = "/dbpilot/restore-volume"
)

// Keys of an object store's credentials Secret.
const (
	KeyAccessKeyID     = "access-key-id"
	KeySecretAccessKey = "secret-access-key"
	// KeyCA is optional: a PEM bundle that signs the store's certificate.
	KeyCA = "ca.crt"
)

// Subcommands PostgreSQL runs.
const (
	// CommandWALPush uploads one WAL segment (archive_command).
	CommandWALPush = "wal-push"
	// CommandWALFetch downloads one WAL segment (restore_command).
	CommandWALFetch = "wal-fetch"
)

// BackupTarget is a backup destination as a pod sees it: exactly one of S3
// or Dir. Secrets are not in it, only the directory that holds them.
type BackupTarget struct {
	S3 *S3Target `json:"s3,omitempty"`
	// Dir is a mounted volume's directory.
	Dir string `json:"dir,omitempty"`
}

// S3Target is a bucket and the directory of its credentials' files.
type S3Target struct {
	Endpoint       string `json:"endpoint,omitempty"`
	Region         string `json:"region,omitempty"`
	Bucket         string `json:"bucket"`
	Prefix         string `json:"prefix"`
	CredentialsDir string `json:"credentialsDir"`
}

// RestoreSource is the backup a new Database starts from.
type RestoreSource struct {
	Target BackupTarget `json:"target"`
	// Backup names the base backup.
	Backup string `json:"backup"`
	// TargetTime, when set, stops recovery at the last commit before it
	// (point-in-time recovery); unset: everything archived is replayed.
	TargetTime *time.Time `json:"targetTime,omitempty"`
}

// The backup endpoints of the instance program, authenticated with the
// replication password as a bearer token.
const (
	// BackupsPath, POSTed a BackupRequest, starts a base backup and
	// answers 202; GET BackupsPath/NAME answers its BackupJob.
	BackupsPath = "/backups"
)

// BackupRequest asks an instance to take a base backup.
type BackupRequest struct {
	// Name names the backup in the destination.
	Name string `json:"name"`
}

// Phases of a BackupJob.
const (
	BackupRunning   = "Running"
	BackupCompleted = "Completed"
	BackupFailed    = "Failed"
)

// BackupJob is a base backup an instance runs or ran.
type BackupJob struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// Error says why a Failed backup failed.
	Error string `json:"error,omitempty"`
	// Manifest describes a Completed backup.
	Manifest *BackupManifest `json:"manifest,omitempty"`
}

// BackupManifest describes a base backup; it is stored next to the backup's
// artifacts and written last, so a backup without one is incomplete.
type BackupManifest struct {
	Name    string `json:"name"`
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// SystemID identifies the database cluster (PostgreSQL's system
	// identifier; MariaDB's server UUID): WAL is only ever replayed into
	// the cluster it came from.
	SystemID string `json:"systemID"`
	// Instance is the pod the backup was taken from.
	Instance string `json:"instance"`
	// Timeline, StartPosition and EndPosition are where in the WAL (or
	// binlog) the backup starts and becomes consistent.
	Timeline      int    `json:"timeline,omitempty"`
	StartPosition string `json:"startPosition"`
	EndPosition   string `json:"endPosition"`
	// StartWAL is the first WAL segment a restore needs.
	StartWAL  string    `json:"startWAL,omitempty"`
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	// Files are the backup's artifacts.
	Files []ArtifactFile `json:"files"`
}

// ArtifactFile is one compressed, checksummed artifact.
type ArtifactFile struct {
	// Key is its object key, relative to the destination's prefix.
	Key string `json:"key"`
	// Size is the size of the data before compression.
	Size int64 `json:"size"`
	// StoredSize is the size of the object.
	StoredSize int64 `json:"storedSize"`
	// SHA256 is the object's checksum, in hex.
	SHA256 string `json:"sha256"`
}
