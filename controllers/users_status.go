package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// usersSeen is what a pass knows of the users of spec.users: what the
// replication Secret lists for the pods (each entry as the pods apply it),
// the names whose entry the pass changed there, the key the primary
// names entries with (the replication password,
// layout.ManagedUserDigest), and the users the operator cannot keep as
// written, with why, by name.
type usersSeen struct {
	listed   []layout.ManagedUser
	changed  map[string]bool
	key      string
	problems map[string]string
	// written is when the users were last written for the pods
	// (desired.AnnotationUsersWritten); zero when unknown.
	written time.Time
}

// userStatuses are the users in status.users at now, by name: each one
// listed for the pods and each one with a problem, as the primary's
// report (nil while it reports no users: it does not answer, has not
// looked yet since it started or was promoted, or predates reports)
// tells. A problem makes a user Failed. A user the report names by its
// listed entry as in force at now (layout.ManagedUser.InForce) is Failed
// with the engine's refusal, or else Ready (Locked once removed, Expired
// once its validUntil came); any other is Pending. Without a report, a
// user keeps its stored state unless the pass changed its entry or its
// validUntil came since, and a new one is Pending.
func userStatuses(seen usersSeen, primary string, report *layout.InstanceStatus, stored []dbpilotv1alpha1.UserStatus, now time.Time) []dbpilotv1alpha1.UserStatus {
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
		status := dbpilotv1alpha1.UserStatus{Name: name, State: dbpilotv1alpha1.UserPending}
		entry := listed[name]
		inForce := entry.InForce(now)
		expired := inForce.Locked && !entry.Locked
		r, named := reported[name]
		named = named && r.Entry == layout.ManagedUserDigest(seen.key, inForce)
		switch {
		case seen.problems[name] != "":
			status.State, status.Message = dbpilotv1alpha1.UserFailed, seen.problems[name]
		case report == nil:
			status.Message = "no primary reports how it keeps the users yet"
			// What a primary told; a problem of the operator's, gone, is
			// not, nor a state from before the user's validUntil came.
			if i := slices.IndexFunc(stored, func(s dbpilotv1alpha1.UserStatus) bool { return s.Name == name }); i >= 0 && !seen.changed[name] &&
				(stored[i].State != dbpilotv1alpha1.UserFailed || refusedByPrimary(stored[i])) &&
				(!expired || stored[i].State == dbpilotv1alpha1.UserExpired) {
				status = stored[i]
			}
		case named && r.Refused != "":
			status.State, status.Message = dbpilotv1alpha1.UserFailed, fmt.Sprintf("%s%s refuses it: %s", refusalPrefix, primary, r.Refused)
		case named && expired:
			status.State, status.Message = dbpilotv1alpha1.UserExpired, fmt.Sprintf("its validUntil, %s, has come", entry.ValidUntil)
		case named && entry.Locked:
			status.State = dbpilotv1alpha1.UserLocked
		case named:
			status.State = dbpilotv1alpha1.UserReady
		case expired:
			status.Message = fmt.Sprintf("its validUntil, %s, has come: waiting for the primary %s to lock it", entry.ValidUntil, primary)
		case entry.Locked:
			status.Message = fmt.Sprintf("removed from spec.users: waiting for the primary %s to lock it", primary)
		default:
			status.Message = fmt.Sprintf("waiting for the primary %s to hold it as declared (the kubelet brings the pods a changed Secret within a minute or two)", primary)
		}
		statuses = append(statuses, status)
	}
	return statuses
}

// refusalPrefix begins the message of a user the primary refuses.
const refusalPrefix = "the primary "

// refusedByPrimary tells whether status is a user Failed by the
// primary's refusal, not by a problem of the operator's.
func refusedByPrimary(status dbpilotv1alpha1.UserStatus) bool {
	return status.State == dbpilotv1alpha1.UserFailed && strings.HasPrefix(status.Message, refusalPrefix)
}

// usersRefusal says which users status.users tells Failed by the
// primary's refusal (not by a problem of the operator's, which
// ReasonUsersInvalid tells), and why, or "".
func usersRefusal(seen usersSeen, statuses []dbpilotv1alpha1.UserStatus) string {
	var refusals []string
	for _, status := range statuses {
		if refusedByPrimary(status) && seen.problems[status.Name] == "" {
			refusals = append(refusals, fmt.Sprintf("%s: %s", status.Name, status.Message))
		}
	}
	if len(refusals) == 0 {
		return ""
	}
	return "spec.users: " + strings.Join(refusals, "; ") + "; retrying"
}

// usersSettleWindow is how long after writing the users for the pods the
// operator looks again soon while one is pending: the kubelet brings the
// pods the Secret's change within it.
const usersSettleWindow = 5 * time.Minute

// usersPending tells whether the Database is to be looked at again soon
// for its users: the pod named primary reports itself the primary, a
// listed user is Pending, and either that primary reports users (it
// keeps them: the rest follows within seconds of the kubelet's update)
// or the users were written for the pods less than usersSettleWindow
// before now (a first user waits for the kubelet's update). So
// status.users turns Ready within seconds of the primary keeping a user,
// and an instance program that reports no users (one older than the
// operator) is not asked every few seconds for long.
func usersPending(seen usersSeen, primary string, reports map[string]layout.InstanceStatus, now time.Time) bool {
	if currentPrimary(primary, reports) == "" {
		return false
	}
	report := usersReport(primary, reports)
	if report == nil && now.Sub(seen.written) >= usersSettleWindow {
		return false
	}
	for _, status := range userStatuses(seen, primary, report, nil, now) {
		if status.State == dbpilotv1alpha1.UserPending {
			return true
		}
	}
	return false
}

// usersReport is the report of the pod named primary when it reports
// itself the primary and reports users, or nil.
func usersReport(primary string, reports map[string]layout.InstanceStatus) *layout.InstanceStatus {
	if report := reports[primary]; currentPrimary(primary, reports) != "" && len(report.Users) > 0 {
		return &report
	}
	return nil
}

// expiryReportDelay is how long after a user's validUntil the operator
// looks: the primary locks the user at its next poll, every 2 s, and
// reports it then.
const expiryReportDelay = 3 * time.Second

// untilNextExpiry is how long until the next validUntil among the users
// listed for the pods, expiryReportDelay after it, at most
// maxExpiryWait; 0 when none is to come.
func untilNextExpiry(seen usersSeen, now time.Time) time.Duration {
	var next time.Duration
	for _, u := range seen.listed {
		until, err := u.ExpiresAt()
		if u.Locked || err != nil || until.IsZero() || !now.Before(until) {
			continue
		}
		// A validUntil centuries ahead is beyond what a Duration holds.
		wait := maxExpiryWait
		if until.Before(now.Add(maxExpiryWait)) {
			wait = until.Sub(now) + expiryReportDelay
		}
		if next == 0 || wait < next {
			next = wait
		}
	}
	return next
}

// maxExpiryWait bounds the wait for a validUntil: a pass comes sooner
// anyway, and looks again.
const maxExpiryWait = 24 * time.Hour

// newlyExpired are the users of statuses that are Expired and were not in
// stored.
func newlyExpired(stored, statuses []dbpilotv1alpha1.UserStatus) []dbpilotv1alpha1.UserStatus {
	var expired []dbpilotv1alpha1.UserStatus
	for _, status := range statuses {
		if status.State == dbpilotv1alpha1.UserExpired &&
			!slices.ContainsFunc(stored, func(s dbpilotv1alpha1.UserStatus) bool {
				return s.Name == status.Name && s.State == dbpilotv1alpha1.UserExpired
			}) {
			expired = append(expired, status)
		}
	}
	return expired
}
