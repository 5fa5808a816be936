package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// usersSeen is what a pass knows of the users of spec.users: what the
// replication Secret lists for the pods (each entry as the pods apply it),
// the key the primary names kept entries with (the replication password,
// layout.ManagedUserDigest), and the users the operator cannot keep as
// written, with why, by name.
type usersSeen struct {
	listed   []layout.ManagedUser
	key      string
	problems map[string]string
}

// userStatuses are the users in status.users, by name: each one listed
// for the pods and each one with a problem, as the report of the primary
// (the pod named primary) tells. A problem makes a user Failed; a user
// the primary's engine refuses is Failed with its refusal; one it holds
// as listed is Ready (Locked once removed); any other is Pending. While
// no primary reports, a user keeps its stored state, and a new one is
// Pending.
func userStatuses(seen usersSeen, primary string, report *layout.InstanceStatus, stored []dbpilotv1alpha1.UserStatus) []dbpilotv1alpha1.UserStatus {
	reported := map[string]layout.ManagedUserReport{}
	if report != nil {
		for _, r := range report.Users {
			reported[r.Name] = r
		}
	}
	listed := map[string]layout.ManagedUser{}
	for _, u := range seen.listed {
		listed[u.Name] = u
	}
	names := slices.Sorted(maps.Keys(listed))
	for name := range seen.problems {
		if _, ok := listed[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var statuses []dbpilotv1alpha1.UserStatus
	for _, name := range names {
		status := dbpilotv1alpha1.UserStatus{Name: name}
		entry := listed[name]
		r := reported[name]
		switch {
		case seen.problems[name] != "":
			status.State, status.Message = dbpilotv1alpha1.UserFailed, seen.problems[name]
		case report == nil:
			status.State, status.Message = dbpilotv1alpha1.UserPending, "no primary reports how it keeps the users"
			if i := slices.IndexFunc(stored, func(s dbpilotv1alpha1.UserStatus) bool { return s.Name == name }); i >= 0 {
				status = stored[i]
			}
		case r.Refused != "":
			status.State, status.Message = dbpilotv1alpha1.UserFailed, fmt.Sprintf("the primary %s refuses it: %s", primary, r.Refused)
		case r.Kept == layout.ManagedUserDigest(seen.key, entry) && entry.Locked:
			status.State = dbpilotv1alpha1.UserLocked
		case r.Kept == layout.ManagedUserDigest(seen.key, entry):
			status.State = dbpilotv1alpha1.UserReady
		case entry.Locked:
			status.State, status.Message = dbpilotv1alpha1.UserPending, fmt.Sprintf("removed from spec.users: waiting for the primary %s to lock it", primary)
		default:
			status.State, status.Message = dbpilotv1alpha1.UserPending, fmt.Sprintf("waiting for the primary %s to hold it as declared (the kubelet brings the pods a changed Secret within a minute or two)", primary)
		}
		statuses = append(statuses, status)
	}
	return statuses
}

// usersRefusal says which listed users the primary's engine refuses to
// keep, and why, or "".
func usersRefusal(seen usersSeen, primary string, report *layout.InstanceStatus) string {
	if report == nil {
		return ""
	}
	var refusals []string
	for _, r := range report.Users {
		if r.Refused != "" && slices.ContainsFunc(seen.listed, func(u layout.ManagedUser) bool { return u.Name == r.Name }) {
			refusals = append(refusals, fmt.Sprintf("%s: %s", r.Name, r.Refused))
		}
	}
	if len(refusals) == 0 {
		return ""
	}
	return fmt.Sprintf("spec.users: the primary %s refuses to keep %s; retrying", primary, strings.Join(refusals, "; "))
}

// usersPending tells whether a primary reports and holds a listed user
// otherwise than listed: the Database is then looked at again soon, so
// status.users turns Ready within seconds of the primary keeping it.
func usersPending(seen usersSeen, report *layout.InstanceStatus) bool {
	if report == nil {
		return false
	}
	for _, status := range userStatuses(seen, "", report, nil) {
		if status.State == dbpilotv1alpha1.UserPending {
			return true
		}
	}
	return false
}

// primaryReport is the report of the pod named primary when it reports
// itself the primary, or nil.
func primaryReport(primary string, reports map[string]layout.InstanceStatus) *layout.InstanceStatus {
	if report, ok := reports[primary]; ok && report.Role == layout.RolePrimary {
		return &report
	}
	return nil
}
