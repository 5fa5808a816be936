package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestUserStatuses(t *testing.T) {
	report := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "new"}
	etl := layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "e"}
	gone := layout.ManagedUser{Name: "gone", Locked: true}
	seen := usersSeen{listed: []layout.ManagedUser{report, etl, gone}, key: "k", problems: map[string]string{}}
	entry := func(u layout.ManagedUser) string { return layout.ManagedUserDigest("k", u) }
	oldReport := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "old"}
	primary := func(users ...layout.ManagedUserReport) *layout.InstanceStatus {
		return &layout.InstanceStatus{Role: layout.RolePrimary, Users: users}
	}
	past, future := testNow.Add(-time.Minute).UTC().Format(time.RFC3339), testNow.Add(time.Hour).UTC().Format(time.RFC3339)
	expiring := layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "e", ValidUntil: future}
	expired := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "r", ValidUntil: past}
	lapsed := layout.ManagedUser{Name: "temp", Access: layout.AccessReadOnly, Password: "t", ValidUntil: past}
	ready := func(name string) dbpilotv1alpha1.UserStatus {
		return dbpilotv1alpha1.UserStatus{Name: name, State: dbpilotv1alpha1.UserReady}
	}
	cases := []struct {
		name    string
		seen    usersSeen
		report  *layout.InstanceStatus
		stored  []dbpilotv1alpha1.UserStatus
		want    map[string]dbpilotv1alpha1.UserState
		message map[string]string
		refusal string
		pending bool
	}{{
		name:    "each as the report names its listed entry",
		seen:    seen,
		report:  primary(layout.ManagedUserReport{Name: "report", Entry: entry(report)}, layout.ManagedUserReport{Name: "etl", Entry: entry(etl), Refused: "letting etl write: permission denied"}, layout.ManagedUserReport{Name: "gone", Entry: entry(gone)}),
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserReady, "etl": dbpilotv1alpha1.UserFailed, "gone": dbpilotv1alpha1.UserLocked},
		message: map[string]string{"etl": "the primary db-0 refuses it: letting etl write: permission denied"},
		refusal: "spec.users: etl: the primary db-0 refuses it: letting etl write: permission denied; retrying",
	}, {
		name:    "an entry on its way is pending, a refusal of a former entry too",
		seen:    seen,
		report:  primary(layout.ManagedUserReport{Name: "report", Entry: entry(oldReport)}, layout.ManagedUserReport{Name: "etl", Entry: entry(layout.ManagedUser{Name: "etl", Access: layout.AccessReadOnly, Password: "e"}), Refused: "denied"}),
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserPending, "etl": dbpilotv1alpha1.UserPending, "gone": dbpilotv1alpha1.UserPending},
		message: map[string]string{"report": "waiting for the primary db-0 to hold it as declared", "gone": "waiting for the primary db-0 to lock it"},
		pending: true,
	}, {
		name:    "a digest of another key is no proof",
		seen:    usersSeen{listed: seen.listed, key: "other"},
		report:  primary(layout.ManagedUserReport{Name: "report", Entry: entry(report)}, layout.ManagedUserReport{Name: "gone", Entry: entry(gone)}),
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserPending, "etl": dbpilotv1alpha1.UserPending, "gone": dbpilotv1alpha1.UserPending},
		pending: true,
	}, {
		name:    "a problem of the operator's fails the user, without a refusal",
		seen:    usersSeen{listed: []layout.ManagedUser{report}, key: "k", problems: map[string]string{"report": "spec.users[0]: Secret x lacks the key password", "app": `spec.users[1].name: "app" is the application user`}},
		report:  primary(layout.ManagedUserReport{Name: "report", Entry: entry(report)}),
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserFailed, "app": dbpilotv1alpha1.UserFailed},
		message: map[string]string{"app": "is the application user"},
	}, {
		name:    "without a report the stored states stay, unless the pass changed the entry",
		seen:    usersSeen{listed: seen.listed, key: "k", changed: map[string]bool{"report": true}},
		stored:  []dbpilotv1alpha1.UserStatus{ready("report"), {Name: "etl", State: dbpilotv1alpha1.UserFailed, Message: "the primary db-0 refuses it: denied"}},
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserPending, "etl": dbpilotv1alpha1.UserFailed, "gone": dbpilotv1alpha1.UserPending},
		message: map[string]string{"gone": "no primary reports"},
		refusal: "spec.users: etl: the primary db-0 refuses it: denied; retrying",
	}, {
		name:    "without a report, a problem of the operator's that is gone is not kept",
		seen:    usersSeen{listed: []layout.ManagedUser{report}, key: "k"},
		stored:  []dbpilotv1alpha1.UserStatus{{Name: "report", State: dbpilotv1alpha1.UserFailed, Message: "spec.users[0].passwordSecret.name: Secret x does not exist"}},
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserPending},
		message: map[string]string{"report": "no primary reports"},
	}, {
		name:    "a validUntil come: Expired once the primary reports the user locked, Pending until then; one to come is Ready",
		seen:    usersSeen{listed: []layout.ManagedUser{expiring, expired, lapsed}, key: "k"},
		report:  primary(layout.ManagedUserReport{Name: "etl", Entry: entry(expiring)}, layout.ManagedUserReport{Name: "report", Entry: entry(layout.ManagedUser{Name: "report", Locked: true})}, layout.ManagedUserReport{Name: "temp", Entry: entry(lapsed)}),
		want:    map[string]dbpilotv1alpha1.UserState{"etl": dbpilotv1alpha1.UserReady, "report": dbpilotv1alpha1.UserExpired, "temp": dbpilotv1alpha1.UserPending},
		message: map[string]string{"report": "its validUntil, " + past + ", has come", "temp": "has come: waiting for the primary db-0 to lock it"},
		pending: true,
	}, {
		name:    "without a report, a state from before the validUntil came is not kept, an Expired one is",
		seen:    usersSeen{listed: []layout.ManagedUser{expired, lapsed}, key: "k"},
		stored:  []dbpilotv1alpha1.UserStatus{{Name: "report", State: dbpilotv1alpha1.UserExpired}, ready("temp")},
		want:    map[string]dbpilotv1alpha1.UserState{"report": dbpilotv1alpha1.UserExpired, "temp": dbpilotv1alpha1.UserPending},
		message: map[string]string{"temp": "no primary reports"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			statuses := userStatuses(c.seen, "db-0", c.report, c.stored, testNow.Time)
			got := map[string]dbpilotv1alpha1.UserStatus{}
			var names []string
			for _, s := range statuses {
				got[s.Name] = s
				names = append(names, s.Name)
			}
			if len(got) != len(c.want) {
				t.Errorf("users %v, want %d", names, len(c.want))
			}
			for i := 1; i < len(names); i++ {
				if names[i-1] >= names[i] {
					t.Errorf("users %v, not by name", names)
				}
			}
			for name, want := range c.want {
				if got[name].State != want {
					t.Errorf("%s: %+v, want %s", name, got[name], want)
				}
				if !strings.Contains(got[name].Message, c.message[name]) {
					t.Errorf("%s: message %q lacks %q", name, got[name].Message, c.message[name])
				}
			}
			if refusal := usersRefusal(c.seen, statuses); refusal != c.refusal {
				t.Errorf("refusal %q, want %q", refusal, c.refusal)
			}
			reports := map[string]layout.InstanceStatus{}
			if c.report != nil {
				reports["db-0"] = *c.report
			}
			if pending := usersPending(c.seen, "db-0", reports, testNow.Time); pending != c.pending {
				t.Errorf("pending %v, want %v", pending, c.pending)
			}
		})
	}
}

func TestUsersPendingWhileTheChangeIsOnItsWay(t *testing.T) {
	seen := usersSeen{listed: []layout.ManagedUser{{Name: "report", Access: layout.AccessReadOnly, Password: "p"}}, key: "k"}
	primary := map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary}}
	for what, c := range map[string]struct {
		written time.Duration
		reports map[string]layout.InstanceStatus
		want    bool
	}{
		"written a minute ago, the primary reports no user yet":  {time.Minute, primary, true},
		"written ten minutes ago, the primary reports no user":   {10 * time.Minute, primary, false},
		"written a minute ago, no primary answers":               {time.Minute, map[string]layout.InstanceStatus{}, false},
		"written a minute ago, the designated pod still replica": {time.Minute, map[string]layout.InstanceStatus{"db-0": {Role: layout.RoleReplica}}, false},
	} {
		seen.written = testNow.Add(-c.written)
		if got := usersPending(seen, "db-0", c.reports, testNow.Time); got != c.want {
			t.Errorf("%s: pending %v, want %v", what, got, c.want)
		}
	}
}

func TestUsersReportWantsAPrimaryThatReportsUsers(t *testing.T) {
	users := []layout.ManagedUserReport{{Name: "report", Entry: "e"}}
	for what, c := range map[string]struct {
		reports map[string]layout.InstanceStatus
		want    bool
	}{
		"the primary reporting users":          {map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary, Users: users}}, true},
		"a primary not reporting users yet":    {map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary}}, false},
		"a replica still":                      {map[string]layout.InstanceStatus{"db-0": {Role: layout.RoleReplica, Users: users}}, false},
		"another pod reporting itself primary": {map[string]layout.InstanceStatus{"db-1": {Role: layout.RolePrimary, Users: users}}, false},
	} {
		if got := usersReport("db-0", c.reports) != nil; got != c.want {
			t.Errorf("%s: a report %v, want %v", what, got, c.want)
		}
	}
}

// TestBuildStatusTellsTheUsers: status.users and Degraded (UsersRefused)
// follow the primary's report in one pass, a problem of the operator's
// outranks the refusal (UsersInvalid), and a pass that did not look at
// the users keeps the stored status.users.
func TestBuildStatusTellsTheUsers(t *testing.T) {
	etl := layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "e"}
	report := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "r"}
	seen := usersSeen{listed: []layout.ManagedUser{etl, report}, key: "k"}
	instances := map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary, Users: []layout.ManagedUserReport{
		{Name: "etl", Entry: layout.ManagedUserDigest("k", etl), Refused: "letting etl write: permission denied"},
		{Name: "report", Entry: layout.ManagedUserDigest("k", report)},
	}}}
	obs := observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, testNow.Add(-time.Hour))},
		instances: instances, users: seen, usersObserved: true}
	degraded := func(status dbpilotv1alpha1.DatabaseStatus) *metav1.Condition {
		return meta.FindStatusCondition(status.Conditions, dbpilotv1alpha1.ConditionDegraded)
	}

	status := buildStatus(testDatabase(1), obs, testNow)
	want := []dbpilotv1alpha1.UserStatus{
		{Name: "etl", State: dbpilotv1alpha1.UserFailed, Message: "the primary db-0 refuses it: letting etl write: permission denied"},
		{Name: "report", State: dbpilotv1alpha1.UserReady},
	}
	if !slices.Equal(status.Users, want) {
		t.Errorf("status.users %+v, want %+v", status.Users, want)
	}
	if d := degraded(status); d.Reason != dbpilotv1alpha1.ReasonUsersRefused || !strings.Contains(d.Message, "etl: the primary db-0 refuses it") {
		t.Errorf("Degraded %s: %s, want UsersRefused naming etl", d.Reason, d.Message)
	}

	invalid := obs
	invalid.usersProblem = `spec.users[2].name: "app" is the application user`
	if d := degraded(buildStatus(testDatabase(1), invalid, testNow)); d.Reason != dbpilotv1alpha1.ReasonUsersInvalid {
		t.Errorf("Degraded %s with a problem of the operator's, want UsersInvalid", d.Reason)
	}

	db := testDatabase(1)
	db.Status.Users = []dbpilotv1alpha1.UserStatus{{Name: "kept", State: dbpilotv1alpha1.UserLocked}}
	unobserved := obs
	unobserved.usersObserved = false
	if got := buildStatus(db, unobserved, testNow).Users; !slices.Equal(got, db.Status.Users) {
		t.Errorf("a pass that did not look wrote status.users %+v, want the stored %+v", got, db.Status.Users)
	}
}

func TestPasswordProblemTellsNoPassword(t *testing.T) {
	for password, want := range map[string]string{
		"":                 "is missing or empty",
		"s3cret\xff\xfe":   "is not UTF-8 text without NUL",
		"s3cret\x00after":  "is not UTF-8 text without NUL",
		"s3cret — ünïcode": "",
	} {
		got := passwordProblem(password)
		if got != want || (password != "" && strings.Contains(got, "s3cret")) {
			t.Errorf("passwordProblem(%q) = %q, want %q", password, got, want)
		}
	}
}

func TestUntilNextExpiry(t *testing.T) {
	at := func(d time.Duration) string { return testNow.Add(d).UTC().Format(time.RFC3339) }
	seen := usersSeen{listed: []layout.ManagedUser{
		{Name: "a", Access: layout.AccessReadOnly, Password: "p", ValidUntil: at(time.Hour)},
		{Name: "b", Access: layout.AccessReadOnly, Password: "p", ValidUntil: at(10 * time.Minute)},
		{Name: "c", Access: layout.AccessReadOnly, Password: "p", ValidUntil: at(-time.Minute)},
		{Name: "d", Locked: true, ValidUntil: at(time.Minute)},
		{Name: "e", Access: layout.AccessReadOnly, Password: "p"},
	}}
	if got := untilNextExpiry(seen, testNow.Time); got != 10*time.Minute+expiryReportDelay {
		t.Errorf("next expiry in %s, want b's, %s after", got, expiryReportDelay)
	}
	seen.listed = []layout.ManagedUser{{Name: "a", Access: layout.AccessReadOnly, Password: "p", ValidUntil: "9999-12-31T23:59:59Z"}}
	if got := untilNextExpiry(seen, testNow.Time); got != maxExpiryWait {
		t.Errorf("next expiry in %s for a validUntil centuries ahead, want %s", got, maxExpiryWait)
	}
	seen.listed = []layout.ManagedUser{{Name: "c", Access: layout.AccessReadOnly, Password: "p", ValidUntil: at(-time.Minute)}, {Name: "e", Access: layout.AccessReadOnly, Password: "p"}}
	if got := untilNextExpiry(seen, testNow.Time); got != 0 {
		t.Errorf("next expiry in %s with none to come, want 0", got)
	}
}

func TestNewlyExpired(t *testing.T) {
	stored := []dbpilotv1alpha1.UserStatus{{Name: "a", State: dbpilotv1alpha1.UserExpired}, {Name: "b", State: dbpilotv1alpha1.UserPending}}
	statuses := []dbpilotv1alpha1.UserStatus{{Name: "a", State: dbpilotv1alpha1.UserExpired}, {Name: "b", State: dbpilotv1alpha1.UserExpired}, {Name: "c", State: dbpilotv1alpha1.UserLocked}}
	if got := newlyExpired(stored, statuses); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("newly expired %+v, want b alone", got)
	}
}
