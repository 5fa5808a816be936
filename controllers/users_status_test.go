package controllers

import (
	"strings"
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestUserStatusesFollowThePrimarysReport(t *testing.T) {
	report := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "new"}
	etl := layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "e"}
	gone := layout.ManagedUser{Name: "gone", Locked: true}
	fresh := layout.ManagedUser{Name: "fresh", Access: layout.AccessReadOnly, Password: "f"}
	seen := usersSeen{listed: []layout.ManagedUser{report, etl, gone, fresh}, key: "k", problems: map[string]string{"shop": "spec.users[4].name: \"shop\" is the application user"}}
	primary := &layout.InstanceStatus{Role: layout.RolePrimary, Users: []layout.ManagedUserReport{
		// report still has its former password.
		{Name: "report", Kept: layout.ManagedUserDigest("k", layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "old"})},
		{Name: "etl", Refused: "letting etl write: permission denied"},
		{Name: "gone", Kept: layout.ManagedUserDigest("k", gone)},
		{Name: "fresh", Kept: layout.ManagedUserDigest("k", fresh)},
	}}
	got := map[string]dbpilotv1alpha1.UserStatus{}
	var names []string
	for _, s := range userStatuses(seen, "db-0", primary, nil) {
		got[s.Name] = s
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "etl,fresh,gone,report,shop" {
		t.Errorf("users %v, want them all by name", names)
	}
	for name, want := range map[string]dbpilotv1alpha1.UserState{
		"report": dbpilotv1alpha1.UserPending, "etl": dbpilotv1alpha1.UserFailed, "gone": dbpilotv1alpha1.UserLocked,
		"fresh": dbpilotv1alpha1.UserReady, "shop": dbpilotv1alpha1.UserFailed,
	} {
		if got[name].State != want {
			t.Errorf("%s: %+v, want %s", name, got[name], want)
		}
	}
	if !strings.Contains(got["etl"].Message, "db-0 refuses it: letting etl write: permission denied") || !strings.Contains(got["shop"].Message, "application user") {
		t.Errorf("messages: etl %q, shop %q", got["etl"].Message, got["shop"].Message)
	}
	if refusal := usersRefusal(seen, "db-0", primary); !strings.Contains(refusal, "db-0 refuses to keep etl: letting etl write") {
		t.Errorf("refusal %q", refusal)
	}
	if !usersPending(seen, primary) {
		t.Error("report's password on its way is not pending")
	}

	t.Run("another key is no proof", func(t *testing.T) {
		other := seen
		other.key = "other"
		for _, s := range userStatuses(other, "db-0", primary, nil) {
			if s.State == dbpilotv1alpha1.UserReady || s.State == dbpilotv1alpha1.UserLocked {
				t.Errorf("%s is %s on a digest of another key", s.Name, s.State)
			}
		}
	})
	t.Run("without a primary's report, the stored state stays", func(t *testing.T) {
		stored := []dbpilotv1alpha1.UserStatus{{Name: "fresh", State: dbpilotv1alpha1.UserReady}}
		for _, s := range userStatuses(seen, "db-0", nil, stored) {
			switch {
			case s.Name == "fresh" && s.State != dbpilotv1alpha1.UserReady:
				t.Errorf("fresh lost its stored state: %+v", s)
			case s.Name == "report" && s.State != dbpilotv1alpha1.UserPending:
				t.Errorf("report, never reported, is %+v", s)
			}
		}
		if usersPending(seen, nil) {
			t.Error("pending without a primary: the Database would be polled while none runs")
		}
	})
	t.Run("all kept, none pending nor refused", func(t *testing.T) {
		kept := &layout.InstanceStatus{Role: layout.RolePrimary}
		for _, u := range seen.listed {
			kept.Users = append(kept.Users, layout.ManagedUserReport{Name: u.Name, Kept: layout.ManagedUserDigest("k", u)})
		}
		if usersPending(seen, kept) || usersRefusal(seen, "db-0", kept) != "" {
			t.Errorf("pending %v, refusal %q", usersPending(seen, kept), usersRefusal(seen, "db-0", kept))
		}
	})
}
