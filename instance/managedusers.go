package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// UserKeeper is an engine that keeps the users of spec.users
// (layout.ManagedUser).
type UserKeeper interface {
	// EnsureManagedUsers brings the engine's managed users to users on a
	// primary, and reports true, with the users whose statements failed
	// (refused: each error names what failed, never a password); the
	// others are kept. A replica, which receives the users from its
	// primary, only ends the sessions of the locked ones, and reports
	// false: it is asked again, so it keeps users once promoted. err is a
	// failure that kept no user (the engine does not answer). The
	// application user and the users dbpilot keeps are never touched,
	// whatever users says.
	EnsureManagedUsers(ctx context.Context, application string, users []layout.ManagedUser) (primary bool, refused map[string]error, err error)
}

// RefuseUser records in refused that a statement of user's failed: what
// it did and err, each of secrets (the password, and what the engine
// derives from it) replaced. An engine quotes the statement it cannot
// parse after "near" (MariaDB, MySQL; PostgreSQL "at or near"): the
// message stops there.
func RefuseUser(refused map[string]error, user, what string, err error, secrets ...string) {
	message := err.Error()
	for _, secret := range secrets {
		if secret != "" {
			message = strings.ReplaceAll(message, secret, "[redacted]")
		}
	}
	if i := strings.Index(message, "near "); i >= 0 {
		message = strings.TrimSpace(message[:i]) + " [the statement's text left out]"
	}
	refused[user] = errors.Join(refused[user], fmt.Errorf("%s: %s", what, message))
}

// ReadManagedUsers reads the managed users' file; a file that does not
// exist (a Secret without the key) holds none.
func ReadManagedUsers(path string) ([]layout.ManagedUser, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the managed users: %w", err)
	}
	return layout.ParseManagedUsers(data)
}

// managedUsers follows the managed users' file: what it lists is applied
// once on a primary, and again when it changes, a user's validUntil
// coming included (layout.ManagedUser.InForce). A failure never makes
// the instance unready (the application user's login does not depend on
// it) and is retried after a backoff that doubles up to
// maxUsersRetryInterval. A replica, which only ends the sessions of the
// locked users, is asked at every poll for replicaUsersWindow after a
// change (the locks reach it by replication meanwhile), then every
// maxUsersRetryInterval: so it also keeps the users soon after a
// promotion. What a primary kept and what its engine refused is
// published for the status (keptUsers).
type managedUsers struct {
	file string
	// published is where the status reads what was kept.
	published *atomic.Pointer[keptUsers]
	// promotions counts the instance's promotions, promotionsSeen those
	// follow knew of: a replica just promoted keeps the users at once.
	promotions     *atomic.Int64
	promotionsSeen int64
	// applied is what the primary applied last; nil before.
	applied []layout.ManagedUser
	// tried is what was last asked of the engine, and changed when it
	// changed; next is when to ask again without a change.
	tried   []layout.ManagedUser
	changed time.Time
	next    time.Time
	// failures counts the failures in a row, for the backoff.
	failures int
}

// Intervals of managedUsers.
const (
	replicaUsersWindow    = 30 * time.Second
	maxUsersRetryInterval = 30 * time.Second
)

// follow applies the file's users at now when they changed since the
// last application on this primary, or when a retry is due.
func (m *managedUsers) follow(ctx context.Context, engine Engine, application string, now time.Time, log *slog.Logger) {
	keeper, ok := engine.(UserKeeper)
	if !ok {
		return
	}
	users, err := ReadManagedUsers(m.file)
	if err != nil {
		log.Error("reading spec.users; retrying", "error", err.Error())
		return
	}
	// A user whose validUntil came is locked from this poll on, on a
	// replica too (its sessions end there).
	users = layout.UsersInForce(users, now)
	if len(users) == 0 {
		m.publish(nil)
		return
	}
	if m.applied != nil && slices.Equal(users, m.applied) {
		return
	}
	if !slices.Equal(users, m.tried) {
		m.tried, m.changed, m.next, m.failures = users, now, time.Time{}, 0
	}
	if m.promotions != nil && m.promotions.Load() != m.promotionsSeen {
		m.promotionsSeen, m.next = m.promotions.Load(), time.Time{}
	}
	if now.Before(m.next) {
		return
	}
	primary, refused, err := keeper.EnsureManagedUsers(ctx, application, users)
	if err == nil && primary {
		m.publish(&keptUsers{users: users, refused: refused})
		err = JoinRefusals(refused)
	} else if err == nil {
		// A replica reports no user: its primary does.
		m.publish(nil)
	}
	switch {
	case err != nil:
		// The error names a statement's purpose and a user, never a
		// password.
		m.failures++
		m.next = now.Add(min(credentialsPollInterval<<min(m.failures, 5), maxUsersRetryInterval))
		log.Error("keeping the users of spec.users; retrying", "error", err.Error(), "retryIn", m.next.Sub(now).String())
	case primary:
		m.applied, m.failures = users, 0
		log.Info("the users of spec.users are kept", "users", len(users))
	case now.Sub(m.changed) < replicaUsersWindow:
		m.failures, m.next = 0, time.Time{}
	default:
		m.failures, m.next = 0, now.Add(maxUsersRetryInterval)
	}
}

// publish makes kept what the status reports; nil reports no user.
func (m *managedUsers) publish(kept *keptUsers) {
	if m.published != nil {
		m.published.Store(kept)
	}
}

// keptUsers is what a primary's engine did with the users of a managed
// users' file: each one whose statements all succeeded is kept as the
// file says; each one refused is not.
type keptUsers struct {
	users   []layout.ManagedUser
	refused map[string]error
}

// report is kept as the status tells it, by user name, each entry named
// by its digest keyed with key (layout.ManagedUserDigest).
func (k *keptUsers) report(key string) []layout.ManagedUserReport {
	if k == nil {
		return nil
	}
	var reports []layout.ManagedUserReport
	for _, u := range k.users {
		report := layout.ManagedUserReport{Name: u.Name, Entry: layout.ManagedUserDigest(key, u)}
		if why := k.refused[u.Name]; why != nil {
			report.Refused = why.Error()
		}
		reports = append(reports, report)
	}
	slices.SortFunc(reports, func(a, b layout.ManagedUserReport) int { return strings.Compare(a.Name, b.Name) })
	return reports
}

// JoinRefusals is refused as one error, by user name; nil without any.
func JoinRefusals(refused map[string]error) error {
	var each []error
	for _, user := range slices.Sorted(maps.Keys(refused)) {
		each = append(each, refused[user])
	}
	return errors.Join(each...)
}
