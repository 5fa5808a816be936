package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

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
// once on a primary, and again when it changes; a failure is retried at
// the next poll, and never makes the instance unready (the application
// user's login does not depend on it).
type managedUsers struct {
	file string
	// applied is what the primary applied last; nil before.
	applied []layout.ManagedUser
}

// follow applies the file's users when they changed since the last
// application on this primary.
func (m *managedUsers) follow(ctx context.Context, engine Engine, application string, log *slog.Logger) {
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
	primary, err := keeper.EnsureManagedUsers(ctx, application, users)
	if err != nil {
		// The error names a statement's purpose and a user, never a
		// password.
		log.Error("keeping the users of spec.users; retrying", "error", err.Error())
		return
	}
	if primary {
		m.applied = users
		log.Info("the users of spec.users are kept", "users", len(users))
	}
}
