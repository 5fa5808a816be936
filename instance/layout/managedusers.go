package layout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// KeyUsers, in the replication Secret, holds the users of spec.users as
// the instance program applies them (FormatManagedUsers).
const KeyUsers = "users"

// UsersFile is where the pods read KeyUsers: the replication Secret is
// mounted whole, so a key it gains reaches the running pods.
const UsersFile = ReplicationDir + "/" + KeyUsers

// Accesses of a managed user, as spec.users names them.
const (
	AccessReadOnly  = "ReadOnly"
	AccessReadWrite = "ReadWrite"
	AccessConnect   = "Connect"
)

// ManagedUser is a user of spec.users as the instance program keeps it in
// the engine.
type ManagedUser struct {
	// Name is the user's name in the engine.
	Name string `json:"name"`
	// Access is AccessReadOnly, AccessReadWrite or AccessConnect.
	Access string `json:"access,omitempty"`
	// Password is the user's password; empty when Locked.
	Password string `json:"password,omitempty"`
	// ConnectionLimit is how many sessions the user may hold at once; 0
	// for no limit of its own.
	ConnectionLimit int32 `json:"connectionLimit,omitempty"`
	// Locked: the user was removed from spec.users. It may no longer log
	// in and its sessions end; what it owns is kept.
	Locked bool `json:"locked,omitempty"`
	// ValidUntil, when set, is the instant (RFC 3339) from which the user
	// is kept as if Locked (InForce).
	ValidUntil string `json:"validUntil,omitempty"`
}

// ExpiresAt is the instant ValidUntil names; the zero time without one.
func (u ManagedUser) ExpiresAt() (time.Time, error) {
	if u.ValidUntil == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, u.ValidUntil)
}

// InForce is how the user is kept at now: locked, without a password,
// once its ValidUntil has come (or cannot be read), as the entry says
// otherwise.
func (u ManagedUser) InForce(now time.Time) ManagedUser {
	until, err := u.ExpiresAt()
	if u.Locked || (err == nil && (until.IsZero() || now.Before(until))) {
		return u
	}
	return ManagedUser{Name: u.Name, Locked: true}
}

// UsersInForce is each of users as InForce keeps it at now.
func UsersInForce(users []ManagedUser, now time.Time) []ManagedUser {
	var inForce []ManagedUser
	for _, u := range users {
		inForce = append(inForce, u.InForce(now))
	}
	return inForce
}

// FormatManagedUsers is the KeyUsers value of users: JSON, sorted by name,
// so the same users always give the same bytes.
func FormatManagedUsers(users []ManagedUser) ([]byte, error) {
	sorted := slices.Clone(users)
	slices.SortFunc(sorted, func(a, b ManagedUser) int { return strings.Compare(a.Name, b.Name) })
	return json.Marshal(sorted)
}

// ParseManagedUsers reads a KeyUsers value; empty data holds no users. An
// entry without a name, of an unknown access or neither locked nor with a
// password is refused, naming the entry (never a password).
func ParseManagedUsers(data []byte) ([]ManagedUser, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	var users []ManagedUser
	if err := json.Unmarshal(data, &users); err != nil {
		return nil, fmt.Errorf("the managed users are not a JSON list of users: %w", err)
	}
	seen := map[string]bool{}
	for i, u := range users {
		_, untilErr := u.ExpiresAt()
		switch {
		case u.Name == "":
			return nil, fmt.Errorf("managed user %d has no name", i)
		case seen[u.Name]:
			return nil, fmt.Errorf("managed user %q is listed twice", u.Name)
		case u.Access != AccessReadOnly && u.Access != AccessReadWrite && u.Access != AccessConnect && !u.Locked:
			return nil, fmt.Errorf("managed user %q has access %q, not %s, %s or %s", u.Name, u.Access, AccessReadOnly, AccessReadWrite, AccessConnect)
		case u.Password == "" && !u.Locked:
			return nil, fmt.Errorf("managed user %q has no password", u.Name)
		case u.ConnectionLimit < 0:
			return nil, fmt.Errorf("managed user %q has a negative connection limit %d", u.Name, u.ConnectionLimit)
		case untilErr != nil:
			return nil, fmt.Errorf("managed user %q has a validUntil that is no RFC 3339 instant: %q", u.Name, u.ValidUntil)
		}
		seen[u.Name] = true
	}
	return users, nil
}

// LockedFirst is users with the locked ones first, each part in its
// order: removing a user's access never waits behind another user.
func LockedFirst(users []ManagedUser) []ManagedUser {
	sorted := slices.Clone(users)
	slices.SortStableFunc(sorted, func(a, b ManagedUser) int {
		switch {
		case a.Locked == b.Locked:
			return 0
		case a.Locked:
			return -1
		}
		return 1
	})
	return sorted
}

// ManagedUserReport is how a primary keeps one user of the managed users'
// file, as InstanceStatus.Users reports it. It holds no password.
type ManagedUserReport struct {
	// Name is the user's name.
	Name string `json:"name"`
	// Entry is the ManagedUserDigest of the user's entry the engine was
	// last asked to keep.
	Entry string `json:"entry"`
	// Refused says why the engine refused a statement of that entry
	// (never a password); "" when it holds the user as the entry says.
	Refused string `json:"refused,omitempty"`
}

// managedUserDigestContext sets the digests of entries apart from any
// other use of their key.
const managedUserDigestContext = "dbpilot managed user entry\x00"

// ManagedUserDigest is what a report names an entry by: HMAC-SHA256 (hex)
// of its JSON, keyed with the replication password. The instance
// program's status answers anyone who reaches it, and a digest of a
// password the owner chose could be guessed offline: a keyed one cannot
// without the key.
func ManagedUserDigest(key string, u ManagedUser) string {
	entry, err := json.Marshal(u)
	if err != nil {
		// A struct of strings, a number and a bool always marshals.
		panic(err)
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(managedUserDigestContext))
	mac.Write(entry)
	return hex.EncodeToString(mac.Sum(nil))
}

// PasswordOf is the password of the user named name in users; "" when
// it is not there or is locked.
func PasswordOf(users []ManagedUser, name string) string {
	for _, u := range users {
		if u.Name == name {
			return u.Password
		}
	}
	return ""
}
