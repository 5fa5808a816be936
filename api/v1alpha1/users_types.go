package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UserAccess is what a user of spec.users may do in the application
// database.
// +kubebuilder:validation:Enum=ReadOnly;ReadWrite;Connect
type UserAccess string

// The accesses of a user of spec.users. None changes the schema: the
// application user owns it.
const (
	// UserAccessReadOnly reads every table's rows (PostgreSQL:
	// pg_read_all_data, and its sessions are read-only by default;
	// MariaDB/MySQL: SELECT on the application database).
	UserAccessReadOnly UserAccess = "ReadOnly"
	// UserAccessReadWrite also inserts, updates and deletes them
	// (PostgreSQL: pg_write_all_data besides; MariaDB/MySQL: INSERT,
	// UPDATE, DELETE besides).
	UserAccessReadWrite UserAccess = "ReadWrite"
	// UserAccessConnect logs in to the application database and does
	// there only what the application user grants it (GRANT SELECT ON
	// orders TO report): no table of its own.
	UserAccessConnect UserAccess = "Connect"
)

// DatabaseUser is a user dbpilot keeps in the engine besides the
// application user, with a password it generates into the Secret
// <name>.user.<user> (keys username and password; the name's _ become -)
// or reads from a Secret of the owner's (passwordSecret).
type DatabaseUser struct {
	// name is the user's name in the engine: lowercase letters, digits
	// and _, starting with a letter and ending with a letter or a digit
	// (so it can label its Secret), at most 32 characters, not one
	// dbpilot or the engine keeps
	// (postgres, root, mysql, public, none, a name starting with pg_ or
	// dbpilot_) and not the application user's.
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9_]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!(self in ['postgres', 'root', 'mysql', 'public', 'none', 'current_user', 'session_user', 'current_role']) && !self.startsWith('pg_') && !self.startsWith('dbpilot_')",message="spec.users[].name: postgres, root, mysql, public, none, current_user, session_user, current_role and names starting with pg_ or dbpilot_ are the engine's or dbpilot's own"
	Name string `json:"name"`

	// access is what the user may do in the application database:
	// ReadOnly (the default) reads every table's rows; ReadWrite also
	// inserts, updates and deletes them; Connect logs in and does only
	// what the application user grants it, table by table (GRANT SELECT
	// ON orders TO report). None changes the schema.
	// +optional
	// +kubebuilder:default=ReadOnly
	Access UserAccess `json:"access,omitempty"`

	// connectionLimit is how many sessions the user may hold at once
	// (1 to 10000; PostgreSQL's CONNECTION LIMIT, MariaDB/MySQL's
	// MAX_USER_CONNECTIONS): a report tool that opens sessions without
	// bound takes none of the application's. Each server counts its own
	// sessions: the primary and every replica hold the limit apiece. A
	// login beyond it is refused; lowering it ends no open session.
	// Unset, the user has no limit of its own (the server's
	// max_connections bounds every user).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	ConnectionLimit *int32 `json:"connectionLimit,omitempty"`

	// passwordSecret names a Secret of yours that holds the user's
	// password (one an external secret store fills, say): dbpilot reads
	// it, follows its changes into the running engine, never writes it,
	// and generates no Secret for the user. Unset, dbpilot generates the
	// password into <name>.user.<user>.
	// +optional
	PasswordSecret *UserPasswordSecret `json:"passwordSecret,omitempty"`

	// validUntil is when the user's access ends (RFC 3339, such as
	// 2027-01-31T18:00:00Z): from then on it may no longer log in and its
	// open sessions end, on the primary and every replica, as for a user
	// removed from the list (its Secret and what it owns are kept), and
	// status.users tells it Expired. PostgreSQL refuses its password from
	// that instant (VALID UNTIL); the instance programs lock it and end
	// its sessions at their next poll, within seconds (on MariaDB and
	// MySQL nothing else holds the instant). Pods whose instance program
	// predates validUntil keep the user until they roll (it stays
	// Pending). A later instant, or none, lets it log in again.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`
	ValidUntil *metav1.Time `json:"validUntil,omitempty"`
}

// UserPasswordSecret names a Secret of the owner's holding a user's
// password.
type UserPasswordSecret struct {
	// name is the Secret's name (a DNS subdomain), in the Database's
	// namespace. Its key password is the user's password (UTF-8 text
	// without NUL); its key username, when there, must be the user's
	// name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// UserSecretName is the Secret of the password dbpilot generates for the
// user of spec.users named user. The dots keep it apart from every other
// Database's Secrets, whose names have none (metadata.name is a DNS
// label), and a Secret's name holds no _ while a user's name holds no -,
// so no two users share one.
func (d *Database) UserSecretName(user string) string {
	return d.Name + ".user." + strings.ReplaceAll(user, "_", "-")
}

// UserAccessOrDefault is the user's access, ReadOnly when unset.
func (u DatabaseUser) UserAccessOrDefault() UserAccess {
	if u.Access == "" {
		return UserAccessReadOnly
	}
	return u.Access
}

// UserState is how far a user of spec.users, or one removed from it, is
// kept as declared.
// +kubebuilder:validation:Enum=Pending;Ready;Failed;Locked;Expired
type UserState string

// The states of a user in status.users.
const (
	// UserPending: the primary does not hold the user as declared yet
	// (a new user, an access or a password on its way to the pods, a
	// new primary that has not kept the users yet), or no primary
	// reports.
	UserPending UserState = "Pending"
	// UserReady: the primary holds the user with its access, and the
	// password its Secret holds.
	UserReady UserState = "Ready"
	// UserFailed: the user is not kept as declared; the message says why
	// (the engine refused a statement, or the user is invalid).
	UserFailed UserState = "Failed"
	// UserLocked: removed from spec.users, the user may no longer log in
	// on the primary.
	UserLocked UserState = "Locked"
	// UserExpired: its validUntil came, and the user may no longer log in
	// on the primary.
	UserExpired UserState = "Expired"
)

// UserStatus is a user of spec.users, or one removed from it, as the
// primary keeps it.
type UserStatus struct {
	// name is the user's name.
	// +required
	Name string `json:"name"`

	// state is Pending, Ready, Failed, Locked or Expired.
	// +required
	State UserState `json:"state"`

	// message says why a user Failed, or what a Pending one waits for.
	// +optional
	Message string `json:"message,omitempty"`
}
