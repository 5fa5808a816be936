package desired

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// AnnotationUsersWritten, on the replication Secret, is when the operator
// last wrote its layout.KeyUsers (RFC 3339): a user is looked at soon
// while the change is on its way to the pods.
const AnnotationUsersWritten = "dbpilot.io/users-written"

// UserSecret is the Secret of a user of spec.users: its name and the
// password dbpilot generated, created once like the credentials Secret
// and never written again (editing its password rotates it).
func UserSecret(db *dbpilotv1alpha1.Database, user, password string) *corev1.Secret {
	secret := generatedSecret(db, db.UserSecretName(user), map[string][]byte{
		SecretKeyUsername: []byte(user),
		SecretKeyPassword: []byte(password),
	})
	secret.Labels[dbpilotv1alpha1.LabelUser] = user
	return secret
}

// ManagedUsers are the users the pods keep in the engine, the replication
// Secret's layout.KeyUsers: each user of spec.users whose password is in
// passwords, with its access, connection limit and validUntil (in UTC);
// each user of previous that spec.users no longer lists, locked (so it
// may no longer log in, and stays locked until it is listed again). A
// user listed without a password (its Secret lost the key) stays as
// previous has it.
func ManagedUsers(users []dbpilotv1alpha1.DatabaseUser, passwords map[string]string, previous []layout.ManagedUser) []layout.ManagedUser {
	var managed []layout.ManagedUser
	listed := map[string]bool{}
	for _, u := range users {
		listed[u.Name] = true
		password, ok := passwords[u.Name]
		if !ok {
			if i := slices.IndexFunc(previous, func(p layout.ManagedUser) bool { return p.Name == u.Name }); i >= 0 {
				managed = append(managed, previous[i])
			}
			continue
		}
		entry := layout.ManagedUser{Name: u.Name, Access: string(u.UserAccessOrDefault()), Password: password, ConnectionLimit: ptr.Deref(u.ConnectionLimit, 0)}
		if u.ValidUntil != nil {
			entry.ValidUntil = u.ValidUntil.UTC().Format(time.RFC3339)
		}
		managed = append(managed, entry)
	}
	for _, p := range previous {
		if !listed[p.Name] {
			managed = append(managed, layout.ManagedUser{Name: p.Name, Locked: true})
		}
	}
	return managed
}
