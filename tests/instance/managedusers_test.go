package instance_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// managedUsersFile writes the users of spec.users as the operator puts
// them in the replication Secret.
func managedUsersFile(t testing.TB, u osUser, path string, users ...layout.ManagedUser) {
	t.Helper()
	data, err := json.Marshal(users)
	if err != nil {
		t.Fatal(err)
	}
	u.writeFile(t, path, string(data))
}

// TestPostgresManagedUsers: the users of spec.users are created with their
// access (ReadOnly reads and writes nothing, ReadWrite writes rows,
// neither creates a table nor reaches another database); a user named as
// the application user changes nothing of it; /status reports each user
// kept by its entry's digest, and the engine's refusal of a user made a
// member of a role it is granted (a cycle), which the retry keeps once
// the cycle is gone; an access raised and a
// password rotated apply to the running engine, and so does a limit of one
// session (a second refused) and its removal; a removed (locked) user
// loses its open session and its login, keeps its rows, and logs in again
// once listed again; removed again and then made the application user, it
// logs in and writes (nothing of the managed user it was holds it back).
func TestPostgresManagedUsers(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	setup := postgresSetup(t, pg)
	creds, port := setup.creds, setup.port
	usersFile := filepath.Join(setup.dir, "users")
	viewer := layout.ManagedUser{Name: "viewer", Access: layout.AccessConnect, Password: "viewer-pass-1"}
	managedUsersFile(t, pg, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "report-pass-1"},
		layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "etl-pass-1"},
		layout.ManagedUser{Name: "shop", Access: layout.AccessReadOnly, Password: "not-the-app-password"}, viewer)
	p := start(t, pg, setup.path, append(setup.args, "--users-file="+usersFile)...)

	app, err := pgConnect(ctx, port, "shop", "app-pass-1", "shop")
	if err != nil {
		t.Fatalf("the application user cannot log in with its own password: %v", err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, "CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)"); err != nil {
		t.Fatalf("the application user cannot write (a managed user of its name changed it): %v", err)
	}

	eventually(t, 15*time.Second, "the ReadOnly user logs in", func() error {
		conn, err := pgConnect(ctx, port, "report", "report-pass-1", "shop")
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
	reportConn, err := pgConnect(ctx, port, "report", "report-pass-1", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := reportConn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("the ReadOnly user reads %d rows (%v), want 1", rows, err)
	}
	if _, err := reportConn.Exec(ctx, "INSERT INTO orders VALUES (2)"); err == nil {
		t.Error("the ReadOnly user wrote a row")
	}
	if _, err := reportConn.Exec(ctx, "BEGIN READ WRITE; INSERT INTO orders VALUES (2); COMMIT"); err == nil {
		t.Error("the ReadOnly user wrote a row in a read-write transaction")
	}
	reportConn.Close(ctx)
	if conn, err := pgConnect(ctx, port, "report", "report-pass-1", "postgres"); err == nil {
		conn.Close(ctx)
		t.Error("the ReadOnly user connects to the postgres database")
	}

	etl, err := pgConnect(ctx, port, "etl", "etl-pass-1", "shop")
	if err != nil {
		t.Fatalf("the ReadWrite user cannot log in: %v", err)
	}
	if _, err := etl.Exec(ctx, "INSERT INTO orders VALUES (3); UPDATE orders SET id = 4 WHERE id = 3; DELETE FROM orders WHERE id = 4; INSERT INTO orders VALUES (5)"); err != nil {
		t.Errorf("the ReadWrite user cannot write rows: %v", err)
	}
	if _, err := etl.Exec(ctx, "CREATE TABLE mine (id int)"); err == nil {
		t.Error("the ReadWrite user created a table")
	}
	var super, createRole, createDB bool
	if err := etl.QueryRow(ctx, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&super, &createRole, &createDB); err != nil || super || createRole || createDB {
		t.Errorf("the ReadWrite user is privileged: superuser=%t createrole=%t createdb=%t (%v)", super, createRole, createDB, err)
	}

	// The status tells each user kept as the file lists it.
	kept := layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "report-pass-1"}
	eventually(t, 10*time.Second, "the status reports the users kept", func() error {
		return reportsUser(p, "report", layout.ManagedUserDigest("", kept), "")
	})

	// The Connect user reads nothing until the application user grants it
	// a table, then that table alone, and writes nothing there.
	if err := reportsUser(p, "viewer", layout.ManagedUserDigest("", viewer), ""); err != nil {
		t.Errorf("the Connect user: %v", err)
	}
	viewerConn, err := pgConnect(ctx, port, "viewer", "viewer-pass-1", "shop")
	if err != nil {
		t.Fatalf("the Connect user cannot log in: %v", err)
	}
	defer viewerConn.Close(ctx)
	if _, err := viewerConn.Exec(ctx, "SELECT count(*) FROM orders"); err == nil {
		t.Error("the Connect user reads a table it was not granted")
	}
	if _, err := app.Exec(ctx, "CREATE TABLE ledger (id int); GRANT SELECT ON orders TO viewer"); err != nil {
		t.Fatalf("the application user cannot grant its table: %v", err)
	}
	if err := viewerConn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 2 {
		t.Errorf("the Connect user granted orders reads %d rows (%v), want 2", rows, err)
	}
	for _, stmt := range []string{"INSERT INTO orders VALUES (7)", "SELECT count(*) FROM ledger"} {
		if _, err := viewerConn.Exec(ctx, stmt); err == nil {
			t.Errorf("the Connect user granted SELECT on orders: %s succeeded", stmt)
		}
	}

	// A statement the engine refuses: report made a member of what it is
	// granted (PostgreSQL refuses the circle), then given a new password.
	// The status tells the refusal, and the retry keeps it once the
	// circle is gone.
	admin, err := pgConnect(ctx, port, "postgres", "super-pass-1", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "REVOKE pg_read_all_data FROM report; GRANT report TO pg_read_all_data"); err != nil {
		t.Fatal(err)
	}
	kept.Password = "report-pass-circle"
	managedUsersFile(t, pg, usersFile, kept, layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "etl-pass-1"})
	eventually(t, 15*time.Second, "the status reports the refusal", func() error {
		return reportsUser(p, "report", layout.ManagedUserDigest("", kept), "letting report read")
	})
	if _, err := admin.Exec(ctx, "REVOKE report FROM pg_read_all_data"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the retry keeps the user", func() error {
		return reportsUser(p, "report", layout.ManagedUserDigest("", kept), "")
	})

	// report raised to ReadWrite with a new password and limited to one
	// session, etl removed while its session is open.
	managedUsersFile(t, pg, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2", ConnectionLimit: 1},
		layout.ManagedUser{Name: "etl", Locked: true})
	eventually(t, 15*time.Second, "the raised user writes with its new password", func() error {
		conn, err := pgConnect(ctx, port, "report", "report-pass-2", "shop")
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "INSERT INTO orders VALUES (6)")
		return err
	})
	if conn, err := pgConnect(ctx, port, "report", "report-pass-1", "shop"); err == nil {
		conn.Close(ctx)
		t.Error("the former password still works")
	}
	var held *pgx.Conn
	eventually(t, 15*time.Second, "the limited user holds its one session", func() (err error) {
		held, err = pgConnect(ctx, port, "report", "report-pass-2", "shop")
		return err
	})
	defer held.Close(ctx)
	if conn, err := pgConnect(ctx, port, "report", "report-pass-2", "shop"); err == nil {
		conn.Close(ctx)
		t.Error("the user limited to one session opened a second")
	} else if !strings.Contains(err.Error(), "too many connections for role") {
		t.Errorf("the second session is refused otherwise than by the limit: %v", err)
	}
	eventually(t, 15*time.Second, "the removed user's open session ends", func() error {
		if _, err := etl.Exec(ctx, "SELECT 1"); err == nil {
			return errors.New("its session still answers")
		}
		return nil
	})
	if conn, err := pgConnect(ctx, port, "etl", "etl-pass-1", "shop"); err == nil {
		conn.Close(ctx)
		t.Error("the removed user still logs in")
	}
	if err := app.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 3 {
		t.Errorf("the application reads %d rows (%v), want 3: the removed user's rows are kept", rows, err)
	}

	managedUsersFile(t, pg, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2"},
		layout.ManagedUser{Name: "etl", Access: layout.AccessReadOnly, Password: "etl-pass-2"})
	eventually(t, 15*time.Second, "the user listed again logs in", func() error {
		conn, err := pgConnect(ctx, port, "etl", "etl-pass-2", "shop")
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
	eventually(t, 15*time.Second, "the limit taken off, a second session opens", func() error {
		conn, err := pgConnect(ctx, port, "report", "report-pass-2", "shop")
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
	held.Close(ctx)

	expectValidUntil(t, pg, usersFile, p,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2"},
		[]layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "etl-pass-2"}},
		func() (func() error, func(), error) {
			conn, err := pgConnect(ctx, port, "report", "report-pass-2", "shop")
			if err != nil {
				return nil, nil, err
			}
			return func() error { _, err := conn.Exec(ctx, "SELECT 1"); return err }, func() { conn.Close(ctx) }, nil
		})

	// Removed again, then made the application user (a credentials
	// Secret of the user's renamed): it logs in, owns its database and
	// writes, read-only by default no more.
	managedUsersFile(t, pg, usersFile, layout.ManagedUser{Name: "etl", Locked: true})
	eventually(t, 15*time.Second, "the removed user is locked", func() error {
		if conn, err := pgConnect(ctx, port, "etl", "etl-pass-2", "shop"); err == nil {
			conn.Close(ctx)
			return errors.New("it still logs in")
		}
		return nil
	})
	credentials(t, pg, creds, "etl", "etl-app-pass", "super-pass-1")
	eventually(t, 15*time.Second, "the application user renamed to the removed user writes in its database", func() error {
		conn, err := pgConnect(ctx, port, "etl", "etl-app-pass", "etl")
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS mine (id int); INSERT INTO mine VALUES (1)")
		return err
	})
	p.stop(t)
}

// TestMariaDBManagedUsers is TestPostgresManagedUsers on MariaDB.
func TestMariaDBManagedUsers(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	setup := mariadbSetup(t, my)
	creds, port := setup.creds, setup.port
	usersFile := filepath.Join(setup.dir, "users")
	viewer := layout.ManagedUser{Name: "viewer", Access: layout.AccessConnect, Password: "viewer-pass-1"}
	managedUsersFile(t, my, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "report-pass-1"},
		layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "etl-pass-1"},
		layout.ManagedUser{Name: "shop", Access: layout.AccessReadOnly, Password: "not-the-app-password"}, viewer)
	p := start(t, my, setup.path, append(setup.args, "--users-file="+usersFile)...)

	app, err := mysqlConnect(ctx, port, "shop", "app-pass-1", "shop")
	if err != nil {
		t.Fatalf("the application user cannot log in with its own password: %v", err)
	}
	defer app.Close()
	if _, err := app.ExecContext(ctx, "CREATE TABLE orders (id int)"); err != nil {
		t.Fatalf("the application user cannot create a table (a managed user of its name changed it): %v", err)
	}
	if _, err := app.ExecContext(ctx, "INSERT INTO orders VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	eventually(t, 15*time.Second, "the ReadOnly user logs in", func() error {
		db, err := mysqlConnect(ctx, port, "report", "report-pass-1", "shop")
		if err == nil {
			db.Close()
		}
		return err
	})
	etlEntry := layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "etl-pass-1"}
	eventually(t, 10*time.Second, "the status reports the users kept", func() error {
		return reportsUser(p, "etl", layout.ManagedUserDigest("", etlEntry), "")
	})
	report, err := mysqlConnect(ctx, port, "report", "report-pass-1", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := report.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("the ReadOnly user reads %d rows (%v), want 1", rows, err)
	}
	if _, err := report.ExecContext(ctx, "INSERT INTO orders VALUES (2)"); err == nil {
		t.Error("the ReadOnly user wrote a row")
	}
	if _, err := report.ExecContext(ctx, "SELECT count(*) FROM mysql.user"); err == nil {
		t.Error("the ReadOnly user reads the system database")
	}
	report.Close()

	etlPool, err := mysqlConnect(ctx, port, "etl", "etl-pass-1", "shop")
	if err != nil {
		t.Fatalf("the ReadWrite user cannot log in: %v", err)
	}
	defer etlPool.Close()
	etl, err := etlPool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"INSERT INTO orders VALUES (3)", "UPDATE orders SET id = 4 WHERE id = 3", "DELETE FROM orders WHERE id = 4", "INSERT INTO orders VALUES (5)"} {
		if _, err := etl.ExecContext(ctx, stmt); err != nil {
			t.Errorf("the ReadWrite user cannot %s: %v", stmt, err)
		}
	}
	if _, err := etl.ExecContext(ctx, "CREATE TABLE mine (id int)"); err == nil {
		t.Error("the ReadWrite user created a table")
	}
	if _, err := etl.ExecContext(ctx, "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'"); err == nil {
		t.Error("the ReadWrite user created a user")
	}

	// The Connect user reaches nothing until the application user grants
	// it a table (which takes the grant option), then that table alone,
	// and writes nothing there.
	if err := reportsUser(p, "viewer", layout.ManagedUserDigest("", viewer), ""); err != nil {
		t.Errorf("the Connect user: %v", err)
	}
	if db, err := mysqlConnect(ctx, port, "viewer", "viewer-pass-1", ""); err != nil {
		t.Errorf("the Connect user cannot log in: %v", err)
	} else {
		db.Close()
	}
	if db, err := mysqlConnect(ctx, port, "viewer", "viewer-pass-1", "shop"); err == nil {
		db.Close()
		t.Error("the Connect user reaches the application database with nothing granted")
	}
	for _, stmt := range []string{"CREATE TABLE ledger (id int)", "GRANT SELECT ON shop.orders TO 'viewer'@'%'"} {
		if _, err := app.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("the application user: %s: %v", stmt, err)
		}
	}
	viewerPool, err := mysqlConnect(ctx, port, "viewer", "viewer-pass-1", "shop")
	if err != nil {
		t.Fatalf("the Connect user granted orders cannot reach the application database: %v", err)
	}
	defer viewerPool.Close()
	if err := viewerPool.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 2 {
		t.Errorf("the Connect user granted orders reads %d rows (%v), want 2", rows, err)
	}
	for _, stmt := range []string{"INSERT INTO orders VALUES (7)", "SELECT count(*) FROM ledger"} {
		if _, err := viewerPool.ExecContext(ctx, stmt); err == nil {
			t.Errorf("the Connect user granted SELECT on orders: %s succeeded", stmt)
		}
	}

	managedUsersFile(t, my, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2", ConnectionLimit: 1},
		layout.ManagedUser{Name: "etl", Locked: true})
	eventually(t, 15*time.Second, "the raised user writes with its new password", func() error {
		db, err := mysqlConnect(ctx, port, "report", "report-pass-2", "shop")
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (6)")
		return err
	})
	if db, err := mysqlConnect(ctx, port, "report", "report-pass-1", "shop"); err == nil {
		db.Close()
		t.Error("the former password still works")
	}
	var held *sql.DB
	eventually(t, 15*time.Second, "the limited user holds its one session", func() (err error) {
		held, err = mysqlConnect(ctx, port, "report", "report-pass-2", "shop")
		return err
	})
	defer held.Close()
	if db, err := mysqlConnect(ctx, port, "report", "report-pass-2", "shop"); err == nil {
		db.Close()
		t.Error("the user limited to one session opened a second")
	} else if !strings.Contains(err.Error(), "max_user_connections") {
		t.Errorf("the second session is refused otherwise than by the limit: %v", err)
	}
	eventually(t, 15*time.Second, "the removed user's open session ends", func() error {
		if _, err := etl.ExecContext(ctx, "SELECT 1"); err == nil {
			return errors.New("its session still answers")
		}
		return nil
	})
	if db, err := mysqlConnect(ctx, port, "etl", "etl-pass-1", "shop"); err == nil {
		db.Close()
		t.Error("the removed user still logs in")
	}
	if err := app.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&rows); err != nil || rows != 3 {
		t.Errorf("the application reads %d rows (%v), want 3: the removed user's rows are kept", rows, err)
	}

	managedUsersFile(t, my, usersFile,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2"},
		layout.ManagedUser{Name: "etl", Access: layout.AccessReadOnly, Password: "etl-pass-2"})
	eventually(t, 15*time.Second, "the user listed again logs in", func() error {
		db, err := mysqlConnect(ctx, port, "etl", "etl-pass-2", "shop")
		if err == nil {
			db.Close()
		}
		return err
	})
	eventually(t, 15*time.Second, "the limit taken off, a second session opens", func() error {
		db, err := mysqlConnect(ctx, port, "report", "report-pass-2", "shop")
		if err == nil {
			db.Close()
		}
		return err
	})
	held.Close()

	expectValidUntil(t, my, usersFile, p,
		layout.ManagedUser{Name: "report", Access: layout.AccessReadWrite, Password: "report-pass-2"},
		[]layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "etl-pass-2"}},
		func() (func() error, func(), error) {
			db, err := mysqlConnect(ctx, port, "report", "report-pass-2", "shop")
			if err != nil {
				return nil, nil, err
			}
			// One session, so that its end is seen, not replaced.
			db.SetMaxOpenConns(1)
			return func() error { _, err := db.ExecContext(ctx, "SELECT 1"); return err }, func() { db.Close() }, nil
		})

	// Removed again, then made the application user: unlocked, it owns
	// its database.
	managedUsersFile(t, my, usersFile, layout.ManagedUser{Name: "etl", Locked: true})
	eventually(t, 15*time.Second, "the removed user is locked", func() error {
		if db, err := mysqlConnect(ctx, port, "etl", "etl-pass-2", "shop"); err == nil {
			db.Close()
			return errors.New("it still logs in")
		}
		return nil
	})
	credentials(t, my, creds, "etl", "etl-app-pass", "super-pass-1")
	eventually(t, 15*time.Second, "the application user renamed to the removed user writes in its database", func() error {
		db, err := mysqlConnect(ctx, port, "etl", "etl-app-pass", "etl")
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS mine (id int)")
		return err
	})
	p.stop(t)
}

// expectValidUntil gives user a validUntil 8 s ahead, the other users of
// the file as they are: until then it logs in and holds a session
// (login); from then on that session ends, a login is refused, and the
// status reports the user locked; a validUntil an hour later lets it in
// again. It logs how long after the instant the session ended.
func expectValidUntil(t *testing.T, u osUser, usersFile string, p *program, user layout.ManagedUser, others []layout.ManagedUser,
	login func() (alive func() error, closeSession func(), err error)) {
	t.Helper()
	until := time.Now().Add(8 * time.Second).UTC().Truncate(time.Second)
	user.ValidUntil = until.Format(time.RFC3339)
	managedUsersFile(t, u, usersFile, append([]layout.ManagedUser{user}, others...)...)
	eventually(t, 6*time.Second, "the status reports the user with its validUntil", func() error {
		return reportsUser(p, user.Name, layout.ManagedUserDigest("", user), "")
	})
	alive, closeSession, err := login()
	if err != nil {
		t.Fatalf("%s does not log in before its validUntil: %v", user.Name, err)
	}
	defer closeSession()
	if err := alive(); err != nil {
		t.Fatalf("%s's session before its validUntil: %v", user.Name, err)
	}
	time.Sleep(time.Until(until))
	eventually(t, 15*time.Second, "the session open at validUntil ends", func() error {
		if alive() == nil {
			return errors.New("its session still answers")
		}
		return nil
	})
	t.Logf("%s's session ended %.1fs after its validUntil", user.Name, time.Since(until).Seconds())
	if _, closeAgain, err := login(); err == nil {
		closeAgain()
		t.Errorf("%s logs in after its validUntil", user.Name)
	}
	eventually(t, 5*time.Second, "the status reports the user locked", func() error {
		return reportsUser(p, user.Name, layout.ManagedUserDigest("", layout.ManagedUser{Name: user.Name, Locked: true}), "")
	})

	user.ValidUntil = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	managedUsersFile(t, u, usersFile, append([]layout.ManagedUser{user}, others...)...)
	eventually(t, 15*time.Second, "a later validUntil lets the user in again", func() error {
		_, closeAgain, err := login()
		if err == nil {
			closeAgain()
		}
		return err
	})
}

// reportsUser checks the instance's status: the user is reported with
// the digest entry of its entry, refused with a message holding refused
// ("" for kept).
func reportsUser(p *program, user, entry, refused string) error {
	resp, err := p.client.Get(strings.Replace(p.probe, "/readyz", layout.StatusPath, 1))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var status layout.InstanceStatus
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		return err
	}
	for _, r := range status.Users {
		if r.Name != user {
			continue
		}
		if r.Entry != entry || (refused == "") != (r.Refused == "") || !strings.Contains(r.Refused, refused) {
			return fmt.Errorf("%s is reported with entry %q, refused %q", user, r.Entry, r.Refused)
		}
		return nil
	}
	return fmt.Errorf("%s is not reported: %+v", user, status.Users)
}
