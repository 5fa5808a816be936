package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var _ instance.UserKeeper = (*Engine)(nil)

// EnsureManagedUsers keeps the users of spec.users on a primary
// (ManagedUserStatements) and ends the sessions of the locked ones, on a
// replica too.
func (e *Engine) EnsureManagedUsers(ctx context.Context, application string, users []layout.ManagedUser) (bool, map[string]error, error) {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return false, nil, err
	}
	defer db.Close()
	replica := e.Flavor == MySQL && e.Replication.CloneFrom != ""
	if !replica {
		if replica, _, _, err = replicaState(ctx, db); err != nil {
			return false, nil, err
		}
	}
	refused := map[string]error{}
	if !replica {
		// Each statement is tried whatever came before: one user's
		// failure keeps no other user as it was.
		for _, stmt := range ManagedUserStatements(e.Flavor, application, users) {
			_, err := db.ExecContext(ctx, stmt.SQL)
			if err != nil && strings.HasPrefix(stmt.SQL, "REVOKE ") && isNoSuchGrant(err) {
				// The user holds nothing on the database: nothing to take.
				err = nil
			}
			if err != nil {
				password := layout.PasswordOf(users, stmt.User)
				instance.RefuseUser(refused, stmt.User, stmt.What, err, password, nativePasswordHash(password))
			}
		}
	}
	for _, u := range users {
		if u.Locked && keepsManagedUser(e.Flavor, application, u.Name) {
			if err := endSessions(ctx, db, u.Name); err != nil {
				instance.RefuseUser(refused, u.Name, "ending the sessions of the locked user", err)
			}
		}
	}
	if replica {
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

// endSessions kills the sessions of user.
func endSessions(ctx context.Context, db *sql.DB, user string) error {
	rows, err := db.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE user = ?", user)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		// A session that ended meanwhile is no error worth retrying.
		if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && !isUnknownThread(err) {
			return err
		}
	}
	return nil
}

// keepsManagedUser is whether a managed user of that name is kept: never
// the application user or one dbpilot or the server keeps.
func keepsManagedUser(flavor Flavor, application, name string) bool {
	return name != application && !layout.IsReservedUser(string(flavor), name)
}

// ManagedUserStatements bring the users of spec.users to what users says.
// Each one that is not locked logs in from anywhere with its password
// (MariaDB: sent as its hash), within its connection limit, and reads
// the application database's tables (SELECT on it alone); ReadWrite also
// inserts, updates and deletes their rows; Connect holds nothing on the
// database, only what the application user grants it on its tables.
// None changes the schema. A
// locked user may no longer log in; what it owns and its grants stay. A
// session keeps the database privileges it had until it reconnects (the
// server's rule). The locks come first (layout.LockedFirst).
func ManagedUserStatements(flavor Flavor, application string, users []layout.ManagedUser) []UserStatement {
	database := quoteIdentifier(application) + ".*"
	var stmts []UserStatement
	for _, u := range layout.LockedFirst(users) {
		add := func(each ...Statement) {
			for _, stmt := range each {
				stmts = append(stmts, UserStatement{u.Name, stmt})
			}
		}
		if !keepsManagedUser(flavor, application, u.Name) {
			continue
		}
		account := quoteString(u.Name) + "@'%'"
		if u.Locked {
			add(Statement{"locking the user " + u.Name + " (removed from spec.users or past its validUntil)", "ALTER USER IF EXISTS " + account + " ACCOUNT LOCK"})
			continue
		}
		auth := "IDENTIFIED BY PASSWORD " + quoteString(nativePasswordHash(u.Password))
		if flavor == MySQL {
			auth = "IDENTIFIED BY " + quoteString(u.Password)
		}
		// 0 is no limit of the user's own.
		limit := fmt.Sprintf(" WITH MAX_USER_CONNECTIONS %d", u.ConnectionLimit)
		add(
			Statement{"creating the user " + u.Name, "CREATE USER IF NOT EXISTS " + account + " " + auth + limit},
			Statement{"updating the user " + u.Name, "ALTER USER " + account + " " + auth + limit + " ACCOUNT UNLOCK"})
		switch u.Access {
		case layout.AccessReadWrite:
			add(
				Statement{"letting " + u.Name + " read", "GRANT SELECT ON " + database + " TO " + account},
				Statement{"letting " + u.Name + " write", "GRANT INSERT, UPDATE, DELETE ON " + database + " TO " + account})
		case layout.AccessConnect:
			// What the application user granted on its tables stays.
			add(Statement{revokeWhat + u.Name + " from reading and writing every table", "REVOKE SELECT, INSERT, UPDATE, DELETE ON " + database + " FROM " + account})
		default:
			add(
				Statement{"letting " + u.Name + " read", "GRANT SELECT ON " + database + " TO " + account},
				Statement{revokeWhat + u.Name + " from writing", "REVOKE INSERT, UPDATE, DELETE ON " + database + " FROM " + account})
		}
	}
	return stmts
}

// revokeWhat begins what a statement that takes privileges (a REVOKE)
// does. The server refuses to take them from a user that holds none on
// the database, which is no failure.
const revokeWhat = "keeping "

// errNoSuchGrant is the server's answer to a REVOKE of privileges on a
// database the user holds none on (ER_NONEXISTING_GRANT).
const errNoSuchGrant = 1141

func isNoSuchGrant(err error) bool {
	var mysqlErr *driver.MySQLError
	return errors.As(err, &mysqlErr) && mysqlErr.Number == errNoSuchGrant
}

// errUnknownThread is the server's answer to a KILL of a session that
// ended (ER_NO_SUCH_THREAD).
const errUnknownThread = 1094

func isUnknownThread(err error) bool {
	var mysqlErr *driver.MySQLError
	return errors.As(err, &mysqlErr) && mysqlErr.Number == errUnknownThread
}
