package instance_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestPostgresReplicaClonesAndStreams starts a primary and a replica through
// the instance program: the replica clones the primary with pg_basebackup
// into its own slot, turns ready only once it streams, refuses writes, and
// has 10,000 rows written on the primary with the same checksum.
func TestPostgresReplicaClonesAndStreams(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	ports := map[string]int{}
	var args = map[string][]string{}
	metrics := map[string]metricsEndpoint{}
	for _, name := range []string{"db-0", "db-1"} {
		dir := pg.workDir(t)
		creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
		sockets := pg.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, pg, creds, "shop", "app-pass", "super-pass")
		pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(t)
		ports[name] = port
		pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
			"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\nhot_standby = on\n", port, sockets))
		args[name] = []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
			"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
			"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds,
			"--instance-name=" + name, "--replication-password-file=" + filepath.Join(dir, "replication-password")}
		var flags []string
		flags, metrics[name] = metricsArgs(t, pg, dir)
		args[name] = append(args[name], flags...)
	}
	primary := start(t, pg, path, args["db-0"]...)
	began := time.Now()
	replica := start(t, pg, path, append(args["db-1"], "--clone-from=127.0.0.1", "--clone-port="+strconv.Itoa(ports["db-0"]), "--max-replica-lag=2s")...)
	t.Logf("replica cloned and streaming in %.1fs", time.Since(began).Seconds())

	app, err := pgConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, "CREATE TABLE orders AS SELECT g AS id, md5(g::text) AS note FROM generate_series(1, 10000) g"); err != nil {
		t.Fatal(err)
	}
	const checksum = "SELECT count(*)::text || ':' || md5(string_agg(id::text || note, ',' ORDER BY id)) FROM orders"
	var want string
	if err := app.QueryRow(ctx, checksum).Scan(&want); err != nil {
		t.Fatal(err)
	}
	sameRows := func() error {
		conn, err := pgConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var got string
		if err := conn.QueryRow(ctx, checksum).Scan(&got); err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("replica %s, primary %s", got, want)
		}
		return nil
	}
	eventually(t, 30*time.Second, "the replica has the primary's rows", sameRows)
	conn, err := pgConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO orders VALUES (0, 'x')"); err == nil {
		t.Error("the replica accepts writes")
	}
	conn.Close(ctx)

	admin, err := pgConnect(ctx, ports["db-0"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var slot string
	if err := admin.QueryRow(ctx, "SELECT slot_name FROM pg_replication_slots WHERE active").Scan(&slot); err != nil || slot != "db_1" {
		t.Errorf("the replica does not stream through its own slot db_1: %q %v", slot, err)
	}
	checkDropSlots(ctx, t, primary, admin)
	admin.Close(ctx)
	checkRoles(t, primary, replica)
	checkLagBound(ctx, t, replica, ports["db-1"], app)
	checkPostgresMetrics(t, metrics["db-0"], metrics["db-1"], 10000)

	// A replica restarted with its slot in place follows on from its data;
	// one whose slot was dropped while it was away clones again.
	replicaArgs := append(args["db-1"], "--clone-from=127.0.0.1", "--clone-port="+strconv.Itoa(ports["db-0"]))
	replica.stop(t)
	replica = start(t, pg, path, replicaArgs...)
	if strings.Contains(replica.printed(), recloneMessage) {
		t.Errorf("a replica with its slot cloned again:\n%s", replica.printed())
	}
	replica.stop(t)
	if _, err := app.Exec(ctx, "INSERT INTO orders SELECT g, md5(g::text) FROM generate_series(10002, 12000) g"); err != nil {
		t.Fatal(err)
	}
	admin, err = pgConnect(ctx, ports["db-0"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_drop_replication_slot('db_1')"); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	if err := app.QueryRow(ctx, checksum).Scan(&want); err != nil {
		t.Fatal(err)
	}
	replica = start(t, pg, path, replicaArgs...)
	if !strings.Contains(replica.printed(), recloneMessage) {
		t.Errorf("a replica whose slot was dropped did not clone again:\n%s", replica.printed())
	}
	eventually(t, 30*time.Second, "the re-cloned replica has the primary's rows", sameRows)

	// A replica promoted on its own (a timeline of its own, writes the
	// primary never saw), then made a standby again, has diverged: it is
	// rewound to the primary's history instead of serving its own.
	own, err := pgConnect(ctx, ports["db-1"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := own.Exec(ctx, "SELECT pg_promote()"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the replica is promoted", func() error {
		_, err := own.Exec(ctx, "CREATE TABLE diverged_only (id int)")
		return err
	})
	own.Close(ctx)
	replica.stop(t)
	pg.writeFile(t, filepath.Join(argValue(t, args["db-1"], "--data-dir"), "standby.signal"), "")
	replica = start(t, pg, path, replicaArgs...)
	if out := replica.printed(); !strings.Contains(out, "diverged") || !strings.Contains(out, rewoundMessage) || strings.Contains(out, recloneMessage) {
		t.Errorf("a diverged replica was not rewound:\n%s", out)
	}
	eventually(t, 30*time.Second, "the re-cloned replica has the primary's rows", sameRows)

	// A running replica whose slot is lost (here: dropped the moment its
	// WAL sender was cut off) cannot stream again: its program empties the
	// data and exits, and the next start clones.
	admin, err = pgConnect(ctx, ports["db-0"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the replica's slot is dropped", func() error {
		if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'db_1' AND active"); err != nil {
			return err
		}
		_, err := admin.Exec(ctx, "SELECT pg_drop_replication_slot('db_1')")
		return err
	})
	admin.Close(ctx)
	if err := replica.waitExit(t, time.Minute); err == nil || !strings.Contains(replica.printed(), recloneMessage) {
		t.Errorf("a replica that lost its slot did not stop to clone again (%v):\n%s", err, replica.printed())
	}
	replica = start(t, pg, path, replicaArgs...)
	eventually(t, 30*time.Second, "the re-cloned replica has the primary's rows", sameRows)
	replica.stop(t)
	primary.stop(t)
}

// argValue is the value of --name=value in args.
func argValue(t testing.TB, args []string, name string) string {
	t.Helper()
	for _, arg := range args {
		if value, ok := strings.CutPrefix(arg, name+"="); ok {
			return value
		}
	}
	t.Fatalf("no %s in %v", name, args)
	return ""
}

// recloneMessage is what the instance program logs when a replica's data
// can no longer follow its primary.
const recloneMessage = "cloning the primary again"

// rewoundMessage is what the instance program logs when pg_rewind took a
// diverged replica or a former primary back to its primary's history.
const rewoundMessage = "pg_rewind done"

// secureReplicationMessage is what the instance program logs when it has a
// running replica reconnect to verify its primary's certificate.
const secureReplicationMessage = "replication now verifies the primary's certificate"

// checkLagBound pauses the replica's replay while the primary writes: past
// the replica's 2 s bound it is not ready, and once replay resumes it is
// again.
func checkLagBound(ctx context.Context, t testing.TB, replica *program, port int, app *pgx.Conn) {
	t.Helper()
	admin, err := pgConnect(ctx, port, "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	// A transaction the replica has replayed, then one it has not.
	time.Sleep(2500 * time.Millisecond)
	if _, err := app.Exec(ctx, "INSERT INTO orders VALUES (10001, 'late')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the lagging replica is not ready", func() error {
		code, body := replica.readiness()
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "behind its primary") {
			return fmt.Errorf("readiness %d: %s", code, body)
		}
		return nil
	})
	if _, err := admin.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the replica that caught up is ready", func() error {
		if code, body := replica.readiness(); code != http.StatusOK {
			return fmt.Errorf("readiness %d: %s", code, body)
		}
		return nil
	})
}

// TestMariaDBReplicaClonesAndReplicates starts a MariaDB primary and a
// replica through the instance program: the replica asks the primary's
// instance program for a backup (refused without the replication
// password), prepares it, replicates by GTID from where it ended, turns
// ready once both replication threads run, refuses the application's
// writes and has 10,000 rows written on the primary with the same checksum.
func TestMariaDBReplicaClonesAndReplicates(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	path := "/usr/sbin:/usr/bin:/bin"
	ports := map[string]int{}
	args := map[string][]string{}
	metrics := map[string]metricsEndpoint{}
	for _, name := range []string{"db-0", "db-1"} {
		dir := my.workDir(t)
		creds := my.mkdir(t, filepath.Join(dir, "credentials"))
		run := my.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, my, creds, "shop", "app-pass", "super-pass")
		my.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(t)
		ports[name] = port
		my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
			"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\nlog-bin = binlog\n", port))
		args[name] = []string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
			"--socket=" + filepath.Join(run, "mysqld.sock"), "--defaults-file=" + filepath.Join(dir, "my.cnf"),
			"--credentials-dir=" + creds, "--instance-name=" + name,
			"--replication-password-file=" + filepath.Join(dir, "replication-password")}
		var flags []string
		flags, metrics[name] = metricsArgs(t, my, dir)
		args[name] = append(args[name], flags...)
	}
	primary := start(t, my, path, args["db-0"]...)
	backup := strings.Replace(primary.probe, "/readyz", "/backup", 1)
	resp, err := http.Get(backup)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unauthenticated backup request got %s", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodGet, backup, nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a backup request with a wrong token got %s", resp.Status)
		}
	}

	app, err := mysqlConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(40))"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(ctx, "INSERT INTO orders SELECT seq, md5(seq) FROM seq_1_to_5000"); err != nil {
		t.Fatal(err)
	}
	instancePort := strings.TrimSuffix(strings.TrimPrefix(primary.probe, "http://127.0.0.1:"), "/readyz")
	began := time.Now()
	replica := start(t, my, path, append(args["db-1"], "--clone-from=127.0.0.1",
		"--clone-port="+strconv.Itoa(ports["db-0"]), "--clone-instance-port="+instancePort)...)
	t.Logf("replica cloned and replicating in %.1fs", time.Since(began).Seconds())
	if _, err := app.ExecContext(ctx, "INSERT INTO orders SELECT seq, md5(seq) FROM seq_5001_to_10000"); err != nil {
		t.Fatal(err)
	}
	const checksum = "SELECT CONCAT(COUNT(*), ':', MD5(GROUP_CONCAT(id, note ORDER BY id))) FROM orders"
	var want string
	if _, err := app.ExecContext(ctx, "SET SESSION group_concat_max_len = 10000000"); err != nil {
		t.Fatal(err)
	}
	conn, err := app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION group_concat_max_len = 10000000"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, checksum).Scan(&want); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if !strings.HasPrefix(want, "10000:") {
		t.Fatalf("the primary has %s", want)
	}
	eventually(t, 30*time.Second, "the replica has the primary's rows", func() error {
		db, err := mysqlConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
		if err != nil {
			return err
		}
		defer db.Close()
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "SET SESSION group_concat_max_len = 10000000"); err != nil {
			return err
		}
		var got string
		if err := c.QueryRowContext(ctx, checksum).Scan(&got); err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("replica %s, primary %s", got, want)
		}
		return nil
	})
	db, err := mysqlConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO orders VALUES (0, 'x')"); err == nil {
		t.Error("the replica accepts the application's writes")
	}
	db.Close()
	checkRoles(t, primary, replica)
	checkMariaDBMetrics(t, metrics["db-0"], metrics["db-1"], 2)

	// The primary purges the binary logs the stopped replica still needs:
	// the replica's program sees its position is gone, empties the data
	// and exits; the next start clones again.
	replica.stop(t)
	if _, err := app.ExecContext(ctx, "INSERT INTO orders SELECT seq, md5(seq) FROM seq_10001_to_10100"); err != nil {
		t.Fatal(err)
	}
	purgeBinaryLogs(ctx, t, argValue(t, args["db-0"], "--socket"))
	replicaArgs := append(args["db-1"], "--clone-from=127.0.0.1",
		"--clone-port="+strconv.Itoa(ports["db-0"]), "--clone-instance-port="+instancePort)
	replica = launch(t, my, path, replicaArgs...)
	if err := replica.waitExit(t, time.Minute); err == nil || !strings.Contains(replica.printed(), recloneMessage) {
		t.Errorf("a replica whose position the primary purged did not stop to clone again (%v):\n%s", err, replica.printed())
	}
	t.Logf("a replica whose position the primary purged stopped to clone again:\n%s", lastLine(replica.printed(), recloneMessage))
	replica = start(t, my, path, replicaArgs...)
	eventually(t, 30*time.Second, "the re-cloned replica has the 10,100 rows", func() error {
		db, err := mysqlConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
		if err != nil {
			return err
		}
		defer db.Close()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
			return err
		}
		if n != 10100 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	})
	replica.stop(t)
	primary.stop(t)
}

// purgeBinaryLogs makes the primary start a new binary log and purge the
// older ones, as root over its socket.
func purgeBinaryLogs(ctx context.Context, t testing.TB, socket string) {
	t.Helper()
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "unix", socket, "root", "super-pass"
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	root := sql.OpenDB(connector)
	defer root.Close()
	root.SetMaxOpenConns(1)
	if _, err := root.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	rows, err := root.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	columns, _ := rows.Columns()
	values := make([]any, len(columns))
	var file sql.NullString
	values[0] = &file
	for i := 1; i < len(values); i++ {
		values[i] = new(sql.RawBytes)
	}
	if !rows.Next() {
		t.Fatal("SHOW MASTER STATUS: no binary log")
	}
	if err := rows.Scan(values...); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	// A log still open for the stopped replica's dump thread is skipped,
	// with a warning: purge until only the new log is left.
	eventually(t, 30*time.Second, "the older binary logs are purged", func() error {
		if _, err := root.ExecContext(ctx, "PURGE BINARY LOGS TO '"+file.String+"'"); err != nil {
			return err
		}
		var logs int
		rows, err := root.QueryContext(ctx, "SHOW BINARY LOGS")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			logs++
		}
		if logs != 1 {
			return fmt.Errorf("%d binary logs left", logs)
		}
		return nil
	})
}

// checkDropSlots: the primary's instance program drops the inactive slots
// it is asked to drop, for a caller with the replication password only; an
// active slot and a slot it was not asked about stay.
func checkDropSlots(ctx context.Context, t testing.TB, primary *program, admin *pgx.Conn) {
	t.Helper()
	for _, slot := range []string{"db_7", "user_slot"} {
		if _, err := admin.Exec(ctx, "SELECT pg_create_physical_replication_slot($1)", slot); err != nil {
			t.Fatal(err)
		}
	}
	if slots := primary.status(t)["slots"]; fmt.Sprint(slots) != "[db_1 db_7 user_slot]" {
		t.Errorf("the primary reports the slots %v", slots)
	}
	url := strings.Replace(primary.probe, "/readyz", layout.DropSlotsPath, 1)
	drop := func(token string) (int, string) {
		body, _ := json.Marshal(layout.DropSlotsRequest{Slots: []string{"db_7", "db_1"}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(answer))
	}
	for _, token := range []string{"", "wrong"} {
		if code, _ := drop(token); code != http.StatusUnauthorized {
			t.Errorf("dropping slots with token %q: %d, want 401", token, code)
		}
	}
	if code, answer := drop("repl-pass"); code != http.StatusOK || answer != `{"dropped":["db_7"]}` {
		t.Errorf("dropping slots: %d %s", code, answer)
	}
	rows, err := admin.Query(ctx, "SELECT slot_name FROM pg_replication_slots ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || fmt.Sprint(left) != "[db_1 user_slot]" {
		t.Errorf("slots left: %v %v", left, err)
	}
}

// lastLine is the last line of out that contains s.
func lastLine(out, s string) string {
	found := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			found = line
		}
	}
	return found
}
