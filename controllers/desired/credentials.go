package desired

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Keys of the credentials Secret, which the instance program reads as files.
const (
	SecretKeyUsername          = layout.KeyUsername
	SecretKeyPassword          = layout.KeyPassword
	SecretKeySuperuserPassword = layout.KeySuperuserPassword
)

// CredentialKeys are the keys every credentials Secret must hold.
var CredentialKeys = []string{SecretKeyUsername, SecretKeyPassword, SecretKeySuperuserPassword}

// AppUsername is the application user of generated credentials.
const AppUsername = "app"

// Credentials are the values of a generated credentials Secret.
type Credentials struct {
	Password          string
	SuperuserPassword string
}

// CredentialsSecret is the generated credentials Secret. It is created once,
// never applied or updated: a later pass or an operator restart must not
// change a password the database already uses.
func CredentialsSecret(db *dbpilotv1alpha1.Database, creds Credentials) *corev1.Secret {
	return generatedSecret(db, db.CredentialsSecretName(), map[string][]byte{
		SecretKeyUsername:          []byte(AppUsername),
		SecretKeyPassword:          []byte(creds.Password),
		SecretKeySuperuserPassword: []byte(creds.SuperuserPassword),
	})
}

// InternalPasswords are the passwords of the users only dbpilot logs in
// as: the replication user and the monitoring user.
type InternalPasswords struct {
	Replication string
	Monitoring  string
}

// InternalKeys are the keys of the replication Secret.
var InternalKeys = []string{layout.KeyReplicationPassword, layout.KeyMonitoringPassword}

// ReplicationSecret holds the replication and monitoring users' passwords.
// Like generated credentials it is created once; a key it lacks (a Secret
// from an older dbpilot) is added, and no value is ever changed.
func ReplicationSecret(db *dbpilotv1alpha1.Database, passwords InternalPasswords) *corev1.Secret {
	return generatedSecret(db, db.ReplicationSecretName(), map[string][]byte{
		layout.KeyReplicationPassword: []byte(passwords.Replication),
		layout.KeyMonitoringPassword:  []byte(passwords.Monitoring),
	})
}

// MetricsKeys are the keys of the metrics Secret.
var MetricsKeys = []string{layout.KeyMetricsToken}

// MetricsSecret holds the bearer token of the metrics endpoints of the
// namespace's database pods. Created once like the others; the token is
// rotated by editing it. It belongs to no Database, since all of the
// namespace's share it: it outlives them, and holds no password.
func MetricsSecret(namespace, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      dbpilotv1alpha1.MetricsSecretName,
			Namespace: namespace,
			Labels:    map[string]string{dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{layout.KeyMetricsToken: []byte(token)},
	}
}

// generatedSecret is a Secret dbpilot generates for the Database.
func generatedSecret(db *dbpilotv1alpha1.Database, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       db.Namespace,
			Labels:          db.CommonLabels(),
			OwnerReferences: []metav1.OwnerReference{db.OwnerReference()},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
