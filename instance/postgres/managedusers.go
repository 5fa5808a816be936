package postgres

import (
	"context"
	"errors"
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
func (e *Engine) EnsureManagedUsers(ctx context.Context, application string, users []layout.ManagedUser) (bool, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	recovering, err := inRecovery(ctx, conn)
	if err != nil {
		return false, err
	}
	if !recovering {
		existing := map[string]bool{}
		rows, err := conn.Query(ctx, "SELECT rolname FROM pg_roles")
		if err != nil {
			return false, err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return false, err
		}
		for _, name := range names {
			existing[name] = true
		}
		verifiers := map[string]string{}
		for _, u := range users {
			if !u.Locked {
				if verifiers[u.Name], err = scramVerifier(u.Password); err != nil {
					return false, err
				}
			}
		}
		// Each statement is tried whatever came before: one user's
		// failure keeps no other user as it was.
		var failed []error
		for _, stmt := range ManagedUserStatements(application, users, verifiers, existing) {
			if _, err := conn.Exec(ctx, stmt.SQL); err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", stmt.What, err))
			}
		}
		if len(failed) > 0 {
			return false, errors.Join(failed...)
		}
	}
	for _, u := range users {
		if u.Locked && keepsManagedUser(application, u.Name) {
			if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", u.Name); err != nil {
				return false, fmt.Errorf("ending the sessions of the locked user %s: %w", u.Name, err)
			}
		}
	}
	return !recovering, nil
}

// keepsManagedUser is whether a managed user of that name is kept: never
// the application user, one dbpilot keeps or a name PostgreSQL reserves.
func keepsManagedUser(application, name string) bool {
	return name != application && !layout.IsReservedUser("postgres", name) && !strings.HasPrefix(name, "pg_")
}

// ManagedUserStatements bring the users of spec.users to what users says,
// given their SCRAM verifiers and the roles that exist. Each one that is
// not locked logs in with its password, with no attribute beyond, and
// connects to the application database alone (the only one its owner
// may create; PUBLIC may connect to none). ReadOnly: a member of
// pg_read_all_data, its sessions read-only by default. ReadWrite: of
// pg_write_all_data too. Neither may create anything in a schema it does
// not own (PostgreSQL 15 gives PUBLIC no CREATE on the public schema). A
// locked user may no longer log in; what it owns and its grants stay.
// The locks come first (layout.LockedFirst).
func ManagedUserStatements(application string, users []layout.ManagedUser, verifiers map[string]string, existing map[string]bool) []Statement {
	database := pgx.Identifier{application}.Sanitize()
	var stmts []Statement
	for _, u := range layout.LockedFirst(users) {
		if !keepsManagedUser(application, u.Name) {
			continue
		}
		role := pgx.Identifier{u.Name}.Sanitize()
		if u.Locked {
			if existing[u.Name] {
				stmts = append(stmts, Statement{"locking the removed user " + u.Name, "ALTER ROLE " + role + " NOLOGIN"})
			}
			continue
		}
		attributes := "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD " + literal(verifiers[u.Name])
		if existing[u.Name] {
			stmts = append(stmts, Statement{"updating the user " + u.Name, "ALTER ROLE " + role + " WITH " + attributes})
		} else {
			stmts = append(stmts, Statement{"creating the user " + u.Name, "CREATE ROLE " + role + " WITH " + attributes})
		}
		stmts = append(stmts,
			Statement{"letting " + u.Name + " connect to the application database", "GRANT CONNECT ON DATABASE " + database + " TO " + role},
			Statement{"letting " + u.Name + " read", "GRANT pg_read_all_data TO " + role})
		if u.Access == layout.AccessReadWrite {
			stmts = append(stmts,
				Statement{"letting " + u.Name + " write", "GRANT pg_write_all_data TO " + role},
				Statement{"making " + u.Name + "'s sessions writable", "ALTER ROLE " + role + " RESET default_transaction_read_only"})
		} else {
			stmts = append(stmts,
				Statement{"keeping " + u.Name + " from writing", "REVOKE pg_write_all_data FROM " + role},
				Statement{"making " + u.Name + "'s sessions read-only", "ALTER ROLE " + role + " SET default_transaction_read_only = on"})
		}
	}
	return stmts
}
