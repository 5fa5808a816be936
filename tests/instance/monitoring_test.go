package instance_test

import (
	"context"
	"testing"
)

// checkPostgresMonitoring: the monitoring user reads the statistics views a
// pg_monitor member reads (other sessions' queries included), and writes
// nothing, not even the table PUBLIC may write (the test made one).
func checkPostgresMonitoring(ctx context.Context, t testing.TB, port int, password string) {
	t.Helper()
	conn, err := pgConnect(ctx, port, "dbpilot_monitoring", password, "postgres")
	if err != nil {
		t.Fatalf("the monitoring user cannot log in: %v", err)
	}
	defer conn.Close(ctx)
	var hidden int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = '<insufficient privilege>'").Scan(&hidden); err != nil {
		t.Errorf("the monitoring user cannot read pg_stat_activity: %v", err)
	} else if hidden > 0 {
		t.Errorf("pg_stat_activity hides %d sessions from the monitoring user: it is not a pg_monitor member", hidden)
	}
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Errorf("the monitoring user is a superuser (%v)", err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO probe VALUES (1)"); err == nil {
		t.Error("the monitoring user wrote a row")
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE mine (id int)"); err == nil {
		t.Error("the monitoring user created a table")
	}
	if c, err := pgConnect(ctx, port, "dbpilot_monitoring", password, "shop"); err == nil {
		c.Close(ctx)
		t.Error("the monitoring user connects to the application database")
	}
}

// checkMariaDBMonitoring: the monitoring user sees every session and the
// replication state, and writes nothing.
func checkMariaDBMonitoring(ctx context.Context, t testing.TB, port int, password string) {
	t.Helper()
	db, err := mysqlConnect(ctx, port, "dbpilot_monitoring", password, "")
	if err != nil {
		t.Fatalf("the monitoring user cannot log in: %v", err)
	}
	defer db.Close()
	var users int
	if err := db.QueryRowContext(ctx, "SELECT count(DISTINCT user) FROM information_schema.processlist").Scan(&users); err != nil {
		t.Errorf("the monitoring user cannot read the process list: %v", err)
	} else if users < 2 {
		t.Errorf("the monitoring user sees only its own sessions (%d users): it lacks PROCESS", users)
	}
	if _, err := db.ExecContext(ctx, "SHOW BINLOG STATUS"); err != nil {
		if _, err := db.ExecContext(ctx, "SHOW MASTER STATUS"); err != nil {
			t.Errorf("the monitoring user cannot read the replication state: %v", err)
		}
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO shop.orders VALUES (1)"); err == nil {
		t.Error("the monitoring user wrote a row")
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE mine"); err == nil {
		t.Error("the monitoring user created a database")
	}
	if _, err := db.ExecContext(ctx, "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'"); err == nil {
		t.Error("the monitoring user created a user")
	}
}
