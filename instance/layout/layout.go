// Package layout is the contract between the operator's pod template and the
// instance program: where things are in a database pod and what they are
// called. Both sides import it, so they cannot drift apart.
package layout

// Keys of the credentials Secret, which is mounted as files of these names,
// and of the replication Secret.
const (
	KeyReplicationPassword = "password"
	KeyUsername            = "username"
	KeyPassword            = "password"
	KeySuperuserPassword   = "superuser-password"
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
	// ProgramInOperatorImage is where the operator's image keeps the
	// instance program.
	ProgramInOperatorImage = "/instance"
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
)
