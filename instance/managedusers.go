package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// UserKeeper is an engine that keeps the users of spec.users
// (layout.ManagedUser).
type UserKeeper interface {
	// EnsureManagedUsers brings the engine's managed users to users on a
	// primary, and reports true. A replica, which receives the users from
	// its primary, only ends the sessions of the locked ones, and reports
	// false: it is asked again, so it keeps users once promoted. The
	// application user and the users dbpilot keeps are never touched,
	// whatever users says.
	EnsureManagedUsers(ctx context.Context, application string, users []layout.ManagedUser) (bool, error)
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
// once on a primary, and again when it changes. A failure never makes
// the instance unready (the application user's login does not depend on
// it) and is retried after a backoff that doubles up to
// maxUsersRetryInterval. A replica, which only ends the sessions of the
// locked users, is asked at every poll for replicaUsersWindow after a
// change (the locks reach it by replication meanwhile), then every
// maxUsersRetryInterval: so it also keeps the users soon after a
// promotion.
type managedUsers struct {
	file string
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
	if len(users) == 0 || (m.applied != nil && slices.Equal(users, m.applied)) {
		return
	}
	if !slices.Equal(users, m.tried) {
		m.tried, m.changed, m.next, m.failures = users, now, time.Time{}, 0
	}
	if now.Before(m.next) {
		return
	}
	primary, err := keeper.EnsureManagedUsers(ctx, application, users)
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
