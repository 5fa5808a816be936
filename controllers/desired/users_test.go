package desired

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestManagedUsers(t *testing.T) {
	ro, rw := dbpilotv1alpha1.UserAccessReadOnly, dbpilotv1alpha1.UserAccessReadWrite
	cases := []struct {
		name      string
		users     []dbpilotv1alpha1.DatabaseUser
		passwords map[string]string
		previous  []layout.ManagedUser
		want      []layout.ManagedUser
	}{
		{name: "none", want: nil},
		{
			name:      "listed users with their passwords and limits, ReadOnly by default",
			users:     []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: "etl", Access: rw, ConnectionLimit: ptr.To[int32](4)}, {Name: "viewer", Access: dbpilotv1alpha1.UserAccessConnect}},
			passwords: map[string]string{"report": "p1", "etl": "p2", "viewer": "p3"},
			want: []layout.ManagedUser{
				{Name: "report", Access: "ReadOnly", Password: "p1"},
				{Name: "etl", Access: "ReadWrite", Password: "p2", ConnectionLimit: 4},
				{Name: "viewer", Access: "Connect", Password: "p3"},
			},
		},
		{
			name: "validUntil in UTC, to the second",
			users: []dbpilotv1alpha1.DatabaseUser{{Name: "etl", ValidUntil: &metav1.Time{
				Time: time.Date(2027, 1, 31, 19, 0, 0, 0, time.FixedZone("CET", 3600))}}},
			passwords: map[string]string{"etl": "p2"},
			want:      []layout.ManagedUser{{Name: "etl", Access: "ReadOnly", Password: "p2", ValidUntil: "2027-01-31T18:00:00Z"}},
		},
		{
			name:      "a removed user is locked, and stays locked",
			users:     []dbpilotv1alpha1.DatabaseUser{{Name: "report", Access: ro}},
			passwords: map[string]string{"report": "p1"},
			previous: []layout.ManagedUser{
				{Name: "report", Access: "ReadWrite", Password: "old"},
				{Name: "etl", Access: "ReadWrite", Password: "p2"},
				{Name: "gone", Locked: true},
			},
			want: []layout.ManagedUser{
				{Name: "report", Access: "ReadOnly", Password: "p1"},
				{Name: "etl", Locked: true},
				{Name: "gone", Locked: true},
			},
		},
		{
			name:      "a locked user listed again is unlocked with its new password",
			users:     []dbpilotv1alpha1.DatabaseUser{{Name: "gone"}},
			passwords: map[string]string{"gone": "new"},
			previous:  []layout.ManagedUser{{Name: "gone", Locked: true}},
			want:      []layout.ManagedUser{{Name: "gone", Access: "ReadOnly", Password: "new"}},
		},
		{
			name:     "a listed user without a password stays as it was",
			users:    []dbpilotv1alpha1.DatabaseUser{{Name: "report", Access: rw}, {Name: "new"}},
			previous: []layout.ManagedUser{{Name: "report", Access: "ReadOnly", Password: "p1"}},
			want:     []layout.ManagedUser{{Name: "report", Access: "ReadOnly", Password: "p1"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ManagedUsers(c.users, c.passwords, c.previous); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ManagedUsers:\n got  %+v\n want %+v", got, c.want)
			}
		})
	}
}

func TestUserSecretNamesTheUser(t *testing.T) {
	db := &dbpilotv1alpha1.Database{}
	db.Name, db.Namespace = "orders", "shop"
	s := UserSecret(db, "report_reader", "pw")
	if s.Name != "orders.user.report-reader" || string(s.Data[SecretKeyUsername]) != "report_reader" || string(s.Data[SecretKeyPassword]) != "pw" {
		t.Errorf("UserSecret: %s %q", s.Name, s.Data)
	}
	if s.Labels[dbpilotv1alpha1.LabelUser] != "report_reader" || s.Labels[dbpilotv1alpha1.LabelDatabase] != "orders" || len(s.OwnerReferences) != 1 {
		t.Errorf("UserSecret labels %v owners %v", s.Labels, s.OwnerReferences)
	}
}

// TestUsersFileIsWhereThePodsMountIt: the instance program reads the users
// at layout.UsersFile, which is the replication Secret's key there only
// while the Secret is mounted whole (items would leave a new key out) and
// not through subPath (whose files the kubelet never updates).
func TestUsersFileIsWhereThePodsMountIt(t *testing.T) {
	db := &dbpilotv1alpha1.Database{}
	db.Name, db.Namespace, db.Spec.Engine = "orders", "shop", dbpilotv1alpha1.EnginePostgres
	sts := StatefulSet(db, StatefulSetOptions{})
	var volume string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret != nil && *v.Secret.SecretName == db.ReplicationSecretName() {
			volume = *v.Name
			if len(v.Secret.Items) > 0 {
				t.Errorf("the replication Secret is mounted by items %v: a key added later never reaches the pods", v.Secret.Items)
			}
		}
	}
	found := false
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if *m.Name == volume && *m.MountPath+"/"+layout.KeyUsers == layout.UsersFile && (m.SubPath == nil || *m.SubPath == "") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no container mounts the replication Secret (volume %q) where the instance program reads %s", volume, layout.UsersFile)
	}
}
