// Package layout is the contract between the operator's pod template and the
// instance program: where things are in a database pod and what they are
// called. Both sides import it, so they cannot drift apart.
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Keys of the credentials Secret, which is mounted as files of these names,
// and of the replication Secret (the replication and monitoring users'
// passwords, which only dbpilot uses).
const (
	KeyReplicationPassword = "password"
	KeyMonitoringPassword  = "monitoring-password"
	KeyUsername            = "username"
	KeyPassword            = "password"
	KeySuperuserPassword   = "superuser-password"
	KeyPrimary             = "primary"
	KeyEpoch               = "epoch"
)

// Paths in a database pod.
const (
	// BinDir is an emptyDir the init container copies the instance program
	// into, from the operator's image; the engine image needs only the
	// engine's own binaries.
	BinDir = "/dbpilot/bin"
	// InstanceBinary is the database container's entrypoint.
	InstanceBinary = BinDir + "/instance"
	// CredentialsDir holds the credentials Secret as files.
	CredentialsDir = "/dbpilot/credentials"
	// ReplicationDir holds the replication Secret as files.
	ReplicationDir = "/dbpilot/replication"
	// DesignationDir holds the Database's designation ConfigMap as files:
	// KeyPrimary names the instance that is to be the primary, KeyEpoch
	// counts the designations (every failover and switchover adds one).
	DesignationDir = "/dbpilot/designation"
	// PostgresParametersFile is the file, beside PostgreSQL's generated
	// configuration (and the key of the Database's ConfigMap), holding
	// the Database's spec.parameters in postgresql.conf's syntax.
	PostgresParametersFile = "parameters.conf"
	// MySQLParametersFile is the file, beside MariaDB's generated
	// configuration (and the key of the Database's ConfigMap), holding
	// the Database's spec.parameters as a JSON object of names and
	// values. It is no .cnf: the server's includedir does not read it.
	MySQLParametersFile = "parameters.json"
	// MySQLConfigFile is the generated configuration a MariaDB or MySQL
	// server reads (from its conf.d); the instance program follows its
	// changes.
	MySQLConfigFile = "/etc/mysql/conf.d/dbpilot.cnf"
	// ProgramInOperatorImage is where the operator's image keeps the
	// instance program.
	ProgramInOperatorImage = "/instance"
	// TLSDir holds the Database's server certificate Secret as files: the
	// engine and the instance program serve TLS with KeyTLSCert and
	// KeyTLSKey, and verify the other instances with KeyCACert; the
	// engine verifies client certificates with KeyClientCACert.
	TLSDir = "/dbpilot/tls"
)

// Keys of the server certificate Secret (type kubernetes.io/tls) and of the
// certificate authority Secret.
const (
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	// KeyClientCACert, in the server certificate Secret, is the
	// certificate of the authority of the Database's client certificates.
	KeyClientCACert = "client-ca.crt"
)

// Subcommands of the instance program.
const (
	// CommandCopy copies the program itself to a path (the init container).
	CommandCopy = "copy"
	// CommandRun bootstraps the engine when its data directory is empty,
	// keeps its users' passwords equal to the credentials and supervises it.
	CommandRun = "run"
)

// The instance program's probe endpoints, served over HTTP on ProbePort.
const (
	ProbePort     = 8000
	ProbePortName = "instance"
	LivenessPath  = "/healthz"
	ReadinessPath = "/readyz"
	// StatusPath reports the instance's InstanceStatus as JSON.
	StatusPath = "/status"
	// CertificatesPath reports the instance's CertificateStatus as JSON.
	CertificatesPath = "/certificates"
	// DropSlotsPath, POSTed a DropSlotsRequest with the replication
	// password as a bearer token, makes a PostgreSQL primary drop the
	// physical slots it names that no replica streams from.
	DropSlotsPath = "/replication/slots/drop"
	// PromotePath, POSTed a PromoteRequest with the replication password
	// as a bearer token, makes a replica the primary.
	PromotePath = "/promote"
	// DemotePath, POSTed a DemoteRequest with the replication password as
	// a bearer token, makes a primary stop cleanly and turn its data into a replica's: the
	// program exits, and its next start follows the designated primary. It
	// answers a DemoteResponse once the engine has stopped.
	DemotePath = "/demote"
	// FencePath and UnfencePath, POSTed with the replication password as
	// a bearer token, stop the engine cleanly and keep it stopped (across
	// restarts of the container) until the instance is unfenced.
	FencePath   = "/fence"
	UnfencePath = "/unfence"
)

// The instance program's engine metrics, served over HTTPS on MetricsPort
// to a caller presenting the metrics Secret's token as a bearer token.
const (
	MetricsPort     = 9187
	MetricsPortName = "metrics"
	MetricsPath     = "/metrics"
	// MetricsDir holds the Database's metrics Secret as files.
	MetricsDir = "/dbpilot/metrics"
	// KeyMetricsToken is the metrics Secret's key of the bearer token a
	// scraper presents; it grants reading the metrics and nothing else.
	KeyMetricsToken = "token"
)

// PromoteRequest asks a replica to become the primary.
type PromoteRequest struct {
	// Epoch is the designation that names it, which its mounted
	// designation files may not show yet: until they do, they are stale.
	Epoch int64 `json:"epoch"`
	// Slots are the physical replication slots (PostgreSQL) the new
	// primary creates for the other instances, so they keep streaming
	// through their own.
	Slots []string `json:"slots,omitempty"`
}

// DemoteRequest asks a primary to become a replica.
type DemoteRequest struct {
	// Epoch is the designation that names another primary.
	Epoch int64 `json:"epoch"`
}

// DemoteResponse is where a demoted primary's data ends.
type DemoteResponse struct {
	// Position is the last WAL position (PostgreSQL) or GTID position
	// (MariaDB, MySQL) the stopped primary wrote.
	Position string `json:"position"`
}

// DropSlotsRequest names the slots of replicas that no longer exist.
type DropSlotsRequest struct {
	Slots []string `json:"slots"`
}

// DropSlotsResponse names the slots a primary dropped.
type DropSlotsResponse struct {
	Dropped []string `json:"dropped"`
}

// SlotName is the physical replication slot of the instance of a name (a
// pod name): lower case letters, digits and underscores.
func SlotName(instance string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, instance)
}

// Roles an instance reports.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// InstanceStatus is what an instance reports about itself.
type InstanceStatus struct {
	// Role is primary or replica.
	Role string `json:"role"`
	// Position is how far the instance's data goes: PostgreSQL's WAL LSN
	// (written on a primary, replayed on a replica), MariaDB's GTID position.
	Position string `json:"position,omitempty"`
	// LagBytes is how much WAL a PostgreSQL replica has received and not yet
	// replayed.
	LagBytes *int64 `json:"lagBytes,omitempty"`
	// LagSeconds is how far a replica is behind its primary in time.
	LagSeconds *float64 `json:"lagSeconds,omitempty"`
	// Replicating is true while a replica receives from its primary.
	Replicating bool `json:"replicating,omitempty"`
	// Timeline is PostgreSQL's timeline.
	Timeline int64 `json:"timeline,omitempty"`
	// Version is the engine's version.
	Version string `json:"version,omitempty"`
	// Slots are a PostgreSQL primary's physical replication slots.
	Slots []string `json:"slots,omitempty"`
	// DesignatedPrimary is the primary the instance's designation files
	// name, and Epoch their epoch: the kubelet updates the files some time
	// after the ConfigMap changes.
	DesignatedPrimary string `json:"designatedPrimary,omitempty"`
	Epoch             int64  `json:"epoch,omitempty"`
	// Fenced is true while the instance is fenced: its engine does not run.
	Fenced bool `json:"fenced,omitempty"`
	// PendingRestart names the settings of the configuration file the
	// running engine takes only at its next start.
	PendingRestart []string `json:"pendingRestart,omitempty"`
	// ParametersError says why the engine does not run with the
	// Database's spec.parameters (PostgresParametersFile): the engine
	// refused a name or a value, so the settings stay as they were.
	ParametersError string `json:"parametersError,omitempty"`
	// CredentialsApplied is true once the users match the Secret.
	CredentialsApplied bool `json:"credentialsApplied"`
	// Archive reports a primary's WAL (or binlog) archiving, when the
	// Database has a backup destination.
	Archive *ArchiveStatus `json:"archive,omitempty"`
	// Users is how a primary keeps the users of the managed users' file,
	// by name; a replica reports none.
	Users []ManagedUserReport `json:"users,omitempty"`
}

// CertificateStatus is what an instance reports at CertificatesPath about
// the certificate files mounted in its pod, as SHA-256 digests (hex,
// FileDigest), whether its engine runs or not: the operator changes the
// certificate only once every pod trusts its authorities, and drops an
// authority only once every pod's engine serves the new certificate. The
// digests are empty without a certificate.
type CertificateStatus struct {
	// MountedCertificate and MountedAuthorities are the digests of the
	// server certificate (KeyTLSCert) and of the authorities (KeyCACert),
	// as the kubelet last updated the files. The authorities are read
	// from the files at each connection: mounted is trusted.
	MountedCertificate string `json:"mountedCertificate,omitempty"`
	MountedAuthorities string `json:"mountedAuthorities,omitempty"`
	// ServedCertificate is the digest of the certificate file whose
	// certificate the running engine presented in a TLS handshake the
	// instance program made with it (it reloads a changed file within
	// seconds): the former file's while the engine still presents that
	// certificate; empty while it presents neither, does not answer, or
	// has not been asked yet.
	// While the engine does not run, the mounted one, which it reads when
	// it starts.
	ServedCertificate string `json:"servedCertificate,omitempty"`
	// ClientAuthorities is the digest of the client authorities
	// (KeyClientCACert) the running engine verifies client certificates
	// with: the file's content it read last, as it started or by a reload
	// it was asked for without an error (MariaDB's FLUSH SSL reloads at
	// once; PostgreSQL's postmaster as it gets the signal, within
	// moments). While the engine does not run, or runs verifying no
	// client certificate (it started without the file; PostgreSQL while
	// they are not required), the mounted file's, which it reads when it
	// starts. The operator issues the application user's certificate
	// from a new client authority only once every pod's engine verifies
	// with it.
	ClientAuthorities string `json:"clientAuthorities,omitempty"`
}

// FileDigest is the SHA-256 digest (hex) of content, as InstanceStatus
// reports mounted files.
func FileDigest(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// ArchiveStatus is how a primary's archiving goes.
type ArchiveStatus struct {
	// LastArchived names the newest file archived, and when.
	LastArchived     string     `json:"lastArchived,omitempty"`
	LastArchivedTime *time.Time `json:"lastArchivedTime,omitempty"`
	// LastFailed names the newest file whose archiving failed, and when;
	// archiving falls behind while it is newer than LastArchivedTime.
	LastFailed     string     `json:"lastFailed,omitempty"`
	LastFailedTime *time.Time `json:"lastFailedTime,omitempty"`
	// FailedCount counts the failed attempts since the server started.
	FailedCount int64 `json:"failedCount,omitempty"`
}
