package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var _ instance.UserKeeper = (*Engine)(nil)

// EnsureManagedUsers keeps the users of spec.users on a primary
// (ManagedUserStatements) and ends the sessions of the locked ones, on a
// replica too.
func (e *Engine) EnsureManagedUsers(ctx context.Context, application string, users []layout.ManagedUser) (bool, map[string]error, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return false, nil, err
	}
	defer conn.Close(ctx)
	recovering, err := inRecovery(ctx, conn)
	if err != nil {
		return false, nil, err
	}
	refused := map[string]error{}
	if !recovering {
		existing := map[string]bool{}
		rows, err := conn.Query(ctx, "SELECT rolname FROM pg_roles")
		if err != nil {
			return false, nil, err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return false, nil, err
		}
		for _, name := range names {
			existing[name] = true
		}
		verifiers, unverified := map[string]string{}, map[string]bool{}
		for _, u := range users {
			if !u.Locked {
				if verifiers[u.Name], err = scramVerifier(u.Password); err != nil {
					instance.RefuseUser(refused, u.Name, "deriving the password's verifier", err, u.Password)
					unverified[u.Name] = true
				}
			}
		}
		// Each statement is tried whatever came before: one user's
		// failure keeps no other user as it was.
		for _, stmt := range ManagedUserStatements(application, users, verifiers, existing) {
			if unverified[stmt.User] {
				continue
			}
			if _, err := conn.Exec(ctx, stmt.SQL); err != nil {
				instance.RefuseUser(refused, stmt.User, stmt.What, err, layout.PasswordOf(users, stmt.User), verifiers[stmt.User])
			}
		}
	}
	for _, u := range users {
		if u.Locked && keepsManagedUser(application, u.Name) {
			if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", u.Name); err != nil {
				instance.RefuseUser(refused, u.Name, "ending the sessions of the locked user", err)
			}
		}
	}
	if recovering {
		// A replica keeps no user: what failed there is retried, and
		// logged, without a report.
		return false, nil, instance.JoinRefusals(refused)
	}
	return true, refused, nil
}

// UserStatement is a Statement that keeps one managed user.
type UserStatement struct {
	User string
	Statement
}

// keepsManagedUser is whether a managed user of that name is kept: never
// the application user, one dbpilot keeps or a name PostgreSQL reserves.
func keepsManagedUser(application, name string) bool {
	return name != application && !layout.IsReservedUser("postgres", name) && !strings.HasPrefix(name, "pg_")
}

// ManagedUserStatements bring the users of spec.users to what users says,
// given their SCRAM verifiers and the roles that exist. Each one that is
// not locked logs in with its password, within its connection limit (-1
// for none), until its validUntil (PostgreSQL's VALID UNTIL: the server
// refuses the password from then on; infinity without), with no
// attribute beyond, and connects to the application database alone (the
// only one its owner may create; PUBLIC may connect to none). ReadOnly:
// a member of pg_read_all_data, its sessions read-only by default.
// ReadWrite: of pg_write_all_data too. Connect: of neither, with only
// what the application user grants it. None may create anything in a
// schema it does not own (PostgreSQL 15 gives PUBLIC no CREATE on the
// public schema). A locked user may no longer log in; what it owns and
// its grants stay.
// The locks come first (layout.LockedFirst).
func ManagedUserStatements(application string, users []layout.ManagedUser, verifiers map[string]string, existing map[string]bool) []UserStatement {
	database := pgx.Identifier{application}.Sanitize()
	var stmts []UserStatement
	for _, u := range layout.LockedFirst(users) {
		add := func(each ...Statement) {
			for _, stmt := range each {
				stmts = append(stmts, UserStatement{u.Name, stmt})
			}
		}
		if !keepsManagedUser(application, u.Name) {
			continue
		}
		role := pgx.Identifier{u.Name}.Sanitize()
		if u.Locked {
			if existing[u.Name] {
				add(Statement{"locking the user " + u.Name + " (removed from spec.users or past its validUntil)", "ALTER ROLE " + role + " NOLOGIN"})
			}
			continue
		}
		limit := int32(-1)
		if u.ConnectionLimit > 0 {
			limit = u.ConnectionLimit
		}
		// The server itself refuses the password from validUntil on,
		// before the instance program locks the user.
		validUntil := "infinity"
		if u.ValidUntil != "" {
			validUntil = u.ValidUntil
		}
		attributes := fmt.Sprintf("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT %d PASSWORD %s VALID UNTIL %s",
			limit, literal(verifiers[u.Name]), literal(validUntil))
		if existing[u.Name] {
			add(Statement{"updating the user " + u.Name, "ALTER ROLE " + role + " WITH " + attributes})
		} else {
			add(Statement{"creating the user " + u.Name, "CREATE ROLE " + role + " WITH " + attributes})
		}
		add(Statement{"letting " + u.Name + " connect to the application database", "GRANT CONNECT ON DATABASE " + database + " TO " + role})
		switch u.Access {
		case layout.AccessReadWrite:
			add(
				Statement{"letting " + u.Name + " read", "GRANT pg_read_all_data TO " + role},
				Statement{"letting " + u.Name + " write", "GRANT pg_write_all_data TO " + role},
				Statement{"making " + u.Name + "'s sessions writable", "ALTER ROLE " + role + " RESET default_transaction_read_only"})
		case layout.AccessConnect:
			// What the application user granted on its tables stays.
			add(
				Statement{"keeping " + u.Name + " from reading every table", "REVOKE pg_read_all_data FROM " + role},
				Statement{"keeping " + u.Name + " from writing every table", "REVOKE pg_write_all_data FROM " + role},
				Statement{"making " + u.Name + "'s sessions writable where granted", "ALTER ROLE " + role + " RESET default_transaction_read_only"})
		default:
			add(
				Statement{"letting " + u.Name + " read", "GRANT pg_read_all_data TO " + role},
				Statement{"keeping " + u.Name + " from writing", "REVOKE pg_write_all_data FROM " + role},
				Statement{"making " + u.Name + "'s sessions read-only", "ALTER ROLE " + role + " SET default_transaction_read_only = on"})
		}
	}
	return stmts
}
