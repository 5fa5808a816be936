package instance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// post sends an operator request to an instance program with the token
// and returns the answer.
func (p *program) post(t testing.TB, path, token string, body any) (int, string) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, strings.Replace(p.probe, "/readyz", path, 1), bytes.NewReader(data))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := *p.client
	client.Timeout = 3 * time.Minute
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(answer))
}

// kill kills the program and its engine at once, as a lost node would.
func (p *program) kill(t testing.TB) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup, which then signals nothing
		t.Fatalf("the program had exited before it was killed: %v", err)
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the killed program did not exit")
	}
}

// designate writes designation files, as the kubelet projects the
// designation ConfigMap.
func designate(t testing.TB, u osUser, dir, primary string, epoch int) {
	t.Helper()
	u.writeFile(t, filepath.Join(dir, layout.KeyPrimary), primary)
	u.writeFile(t, filepath.Join(dir, layout.KeyEpoch), strconv.Itoa(epoch))
}

// TestPostgresRolesMove moves the primary between two PostgreSQL instances
// the ways the operator does: a switchover (the primary demoted on request,
// the replica promoted once it has everything, the former primary following
// it without a new clone), a failover while the former primary still ran
// (it demotes itself when its designation names another, and is rewound
// because it wrote what the new primary never received), and a failover
// from a crashed primary (rewound, crash recovery included), all with
// TLS: each instance that becomes a replica in place verifies its primary's
// certificate from its first connection. Promotion and demotion need the
// replication password; an empty data directory designated the primary
// after a failover is refused.
func TestPostgresRolesMove(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	ports, args, designations := map[string]int{}, map[string][]string{}, map[string]string{}
	// Both serve the same certificate, as every pod of a Database does.
	certs := newCertificates(t, pg)
	for _, name := range []string{"db-0", "db-1"} {
		dir := pg.workDir(t)
		creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
		sockets := pg.mkdir(t, filepath.Join(dir, "run"))
		designations[name] = pg.mkdir(t, filepath.Join(dir, "designation"))
		designate(t, pg, designations[name], "db-0", 1)
		credentials(t, pg, creds, "shop", "app-pass", "super-pass")
		pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		ports[name] = freePort(t)
		pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
			"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\nhot_standby = on\nwal_keep_size = 64MB\n", ports[name], sockets))
		args[name] = []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
			"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
			"--port=" + strconv.Itoa(ports[name]), "--credentials-dir=" + creds,
			"--instance-name=" + name, "--replication-password-file=" + filepath.Join(dir, "replication-password"),
			"--designation-dir=" + designations[name], "--clone-from=127.0.0.1", "--tls-dir=" + certs.dir}
	}
	// following is an instance's arguments with the primary it follows.
	following := func(name, primary string) []string {
		return append(append([]string{}, args[name]...), "--clone-port="+strconv.Itoa(ports[primary]))
	}
	db0 := start(t, pg, path, following("db-0", "db-1")...)
	db1 := start(t, pg, path, following("db-1", "db-0")...)
	app, err := pgConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, "CREATE TABLE orders AS SELECT g AS id FROM generate_series(1, 1000) g"); err != nil {
		t.Fatal(err)
	}
	app.Close(ctx)
	rows := func(name string) func() (int, error) {
		return func() (int, error) {
			conn, err := pgConnect(ctx, ports[name], "shop", "app-pass", "shop")
			if err != nil {
				return 0, err
			}
			defer conn.Close(ctx)
			var n int
			err = conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n)
			return n, err
		}
	}
	expectRows := func(name string, want int) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("%s has %d rows", name, want), func() error {
			n, err := rows(name)()
			if err == nil && n != want {
				err = fmt.Errorf("%d rows", n)
			}
			return err
		})
	}
	write := func(name, stmt string) {
		t.Helper()
		conn, err := pgConnect(ctx, ports[name], "shop", "app-pass", "shop")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("writing on %s: %v", name, err)
		}
	}
	expectRows("db-1", 1000)
	// verifiesFromItsStart expects a replica that became one in place
	// (demoted, or rewound) to verify its primary's certificate from its
	// first connection: a reconnection to verify it later (SecureReplication
	// reloading primary_conninfo) restarts the WAL receiver, which a
	// switchover to this replica would wait for.
	verifiesFromItsStart := func(name string, p *program) {
		t.Helper()
		eventually(t, 15*time.Second, name+" verifies its primary", func() error {
			conn, err := pgConnect(ctx, ports[name], "postgres", "super-pass", "postgres")
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			var info string
			if err := conn.QueryRow(ctx, "SELECT current_setting('primary_conninfo')").Scan(&info); err != nil {
				return err
			}
			if !verifyFull.MatchString(info) {
				return fmt.Errorf("primary_conninfo without verify-full")
			}
			return nil
		})
		if out := p.printed(); strings.Contains(out, secureReplicationMessage) {
			t.Errorf("%s verified its primary only after a reconnection:\n%s", name, out)
		}
	}

	for _, token := range []string{"", "wrong"} {
		if code, _ := db1.post(t, layout.PromotePath, token, layout.PromoteRequest{}); code != http.StatusUnauthorized {
			t.Errorf("promoting with token %q: %d, want 401", token, code)
		}
		if code, _ := db0.post(t, layout.DemotePath, token, nil); code != http.StatusUnauthorized {
			t.Errorf("demoting with token %q: %d, want 401", token, code)
		}
	}

	// Switchover: db-0 demoted, db-1 promoted once it has db-0's last WAL.
	// db-1's files still show epoch 1 (the kubelet has not updated them):
	// promoted at epoch 2, it does not take them for a demotion.
	designate(t, pg, designations["db-0"], "db-1", 2)
	code, answer := db0.post(t, layout.DemotePath, "repl-pass", layout.DemoteRequest{Epoch: 2})
	var demoted layout.DemoteResponse
	if code != http.StatusOK || json.Unmarshal([]byte(answer), &demoted) != nil || demoted.Position == "" {
		t.Fatalf("demoting db-0: %d %s", code, answer)
	}
	if err := db0.waitExit(t, time.Minute); err == nil || !strings.Contains(db0.printed(), "demoted") {
		t.Errorf("the demoted primary's program did not exit saying so (%v)", err)
	}
	admin1, err := pgConnect(ctx, ports["db-1"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var received bool
	if err := admin1.QueryRow(ctx, "SELECT pg_last_wal_receive_lsn() > $1::pg_lsn", demoted.Position).Scan(&received); err != nil || !received {
		t.Errorf("db-1 did not receive db-0's WAL up to %s before the promotion (%v)", demoted.Position, err)
	}
	if code, answer := db1.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 2, Slots: []string{"db_0"}}); code != http.StatusOK {
		t.Fatalf("promoting db-1: %d %s", code, answer)
	}
	time.Sleep(5 * time.Second) // the designation watcher reads the stale files twice
	if role := db1.status(t)["role"]; role != "primary" {
		t.Errorf("db-1 reports %v after its promotion, its designation files stale", role)
	}
	designate(t, pg, designations["db-1"], "db-1", 2)
	write("db-1", "INSERT INTO orders SELECT g FROM generate_series(1001, 1500) g")
	db0 = start(t, pg, path, following("db-0", "db-1")...)
	if out := db0.printed(); strings.Contains(out, recloneMessage) {
		t.Errorf("the cleanly demoted primary cloned again:\n%s", out)
	}
	expectRows("db-0", 1500)
	verifiesFromItsStart("db-0", db0)
	var slot string
	if err := admin1.QueryRow(ctx, "SELECT slot_name FROM pg_replication_slots WHERE active").Scan(&slot); err != nil || slot != "db_0" {
		t.Errorf("db-0 does not stream through its slot on the new primary: %q %v", slot, err)
	}
	admin1.Close(ctx)

	// Failover while db-1 still runs: db-0 is promoted and db-1, cut off,
	// takes a write db-0 never receives. Once its designation names db-0 it
	// demotes itself; its next start finds it diverged and rewinds it to
	// db-0's history.
	designate(t, pg, designations["db-0"], "db-0", 3)
	if code, answer := db0.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 3, Slots: []string{"db_1"}}); code != http.StatusOK {
		t.Fatalf("promoting db-0: %d %s", code, answer)
	}
	write("db-0", "INSERT INTO orders SELECT g FROM generate_series(1501, 1600) g")
	write("db-1", "INSERT INTO orders VALUES (-1)")
	designate(t, pg, designations["db-1"], "db-0", 3)
	if err := db1.waitExit(t, 30*time.Second); err == nil || !strings.Contains(db1.printed(), "the designation (epoch 3) names db-0") {
		t.Errorf("the replaced primary did not demote itself (%v):\n%s", err, db1.printed())
	}
	db1 = start(t, pg, path, following("db-1", "db-0")...)
	if out := db1.printed(); !strings.Contains(out, "diverged") || !strings.Contains(out, rewoundMessage) || strings.Contains(out, recloneMessage) {
		t.Errorf("the diverged former primary was not rewound:\n%s", out)
	}
	expectRows("db-1", 1600)
	verifiesFromItsStart("db-1", db1)
	conn, err := pgConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var lost int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = -1").Scan(&lost); err != nil || lost != 0 {
		t.Errorf("the diverged write survived on the replica: %d %v", lost, err)
	}
	conn.Close(ctx)

	// Failover from a crashed primary: db-0 takes a write no replica
	// receives and is killed; db-1 is promoted. db-0's data, a crashed
	// primary's with WAL past the new timeline's fork, is rewound (crash
	// recovery included) when it starts designated a replica.
	db1.stop(t)
	write("db-0", "INSERT INTO orders VALUES (-2)")
	db0.kill(t)
	designate(t, pg, designations["db-0"], "db-1", 4)
	designate(t, pg, designations["db-1"], "db-1", 4)
	db1 = launch(t, pg, path, following("db-1", "db-0")...)
	eventually(t, 30*time.Second, "db-1 answers as a replica", func() error {
		if code, _ := db1.readiness(); code == 0 {
			return errors.New("no answer")
		}
		return nil
	})
	eventually(t, 30*time.Second, "db-1 is promoted", func() error {
		if code, answer := db1.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 4, Slots: []string{"db_0"}}); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, answer)
		}
		return nil
	})
	db0 = start(t, pg, path, following("db-0", "db-1")...)
	if out := db0.printed(); !strings.Contains(out, rewoundMessage) || strings.Contains(out, recloneMessage) {
		t.Errorf("the crashed former primary was not rewound:\n%s", out)
	}
	expectRows("db-0", 1600)
	verifiesFromItsStart("db-0", db0)
	db0.stop(t)
	db1.stop(t)

	// An empty data directory designated the primary after a failover is
	// refused, not initialized.
	empty := pg.workDir(t)
	refused := launch(t, pg, path, append(following("db-1", "db-0"), "--data-dir="+filepath.Join(empty, "pgdata"))...)
	if err := refused.waitExit(t, 30*time.Second); err == nil || !strings.Contains(refused.printed(), "refusing to create an empty database") {
		t.Errorf("an empty designated primary was not refused (%v):\n%s", err, refused.printed())
	}
}

// instancePort is the port of a running program's HTTP server.
// mariadbPair are two MariaDB instances, db-0 and db-1, each in its own
// directory: their ports, the instance program's arguments (with extra),
// cloning from 127.0.0.1, and their designations' directories, which name
// db-0 the primary (epoch 1).
func mariadbPair(t *testing.T, my osUser, extra ...string) (ports map[string]int, args map[string][]string, designations map[string]string) {
	t.Helper()
	ports, args, designations = map[string]int{}, map[string][]string{}, map[string]string{}
	for _, name := range []string{"db-0", "db-1"} {
		dir := my.workDir(t)
		creds := my.mkdir(t, filepath.Join(dir, "credentials"))
		run := my.mkdir(t, filepath.Join(dir, "run"))
		designations[name] = my.mkdir(t, filepath.Join(dir, "designation"))
		designate(t, my, designations[name], "db-0", 1)
		credentials(t, my, creds, "shop", "app-pass", "super-pass")
		my.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		ports[name] = freePort(t)
		my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
			"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\nlog-bin = binlog\nlog-slave-updates = ON\n", ports[name]))
		args[name] = append([]string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
			"--socket=" + filepath.Join(run, "mysqld.sock"), "--defaults-file=" + filepath.Join(dir, "my.cnf"),
			"--credentials-dir=" + creds, "--instance-name=" + name,
			"--replication-password-file=" + filepath.Join(dir, "replication-password"),
			"--designation-dir=" + designations[name], "--clone-from=127.0.0.1"}, extra...)
	}
	return ports, args, designations
}

func (p *program) instancePort() string {
	return strings.TrimSuffix(p.probe[strings.LastIndex(p.probe, ":")+1:], "/readyz")
}

// TestMariaDBRolesMove moves the primary between two MariaDB instances: a
// switchover (the demoted primary fenced read-only and stopped, the replica
// promoted once it has executed the primary's last GTID, the former primary
// rejoining it by GTID without a new clone), and a failover while the
// former primary still ran and took a write the new primary never received:
// it demotes itself when its designation names another, its rejoin is
// refused by the new primary (error 1236), and it clones again.
func TestMariaDBRolesMove(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	path := "/usr/sbin:/usr/bin:/bin"
	ports, args, designations := mariadbPair(t, my)
	following := func(name, primary string, primaryProgram *program) []string {
		return append(append([]string{}, args[name]...), "--clone-port="+strconv.Itoa(ports[primary]),
			"--clone-instance-port="+primaryProgram.instancePort())
	}
	db0 := start(t, my, path, args["db-0"]...)
	app, err := mysqlConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY) AS SELECT seq AS id FROM seq_1_to_1000"); err != nil {
		t.Fatal(err)
	}
	app.Close()
	db1 := start(t, my, path, following("db-1", "db-0", db0)...)
	count := func(name string) (int, error) {
		conn, err := mysqlConnect(ctx, ports[name], "shop", "app-pass", "shop")
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		var n int
		err = conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE id > 0").Scan(&n)
		return n, err
	}
	expectRows := func(name string, want int) {
		t.Helper()
		eventually(t, time.Minute, fmt.Sprintf("%s has %d rows", name, want), func() error {
			n, err := count(name)
			if err == nil && n != want {
				err = fmt.Errorf("%d rows", n)
			}
			return err
		})
	}
	write := func(name, stmt string) {
		t.Helper()
		conn, err := mysqlConnect(ctx, ports[name], "shop", "app-pass", "shop")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("writing on %s: %v", name, err)
		}
	}
	expectRows("db-1", 1000)
	if code, _ := db1.post(t, layout.PromotePath, "wrong", layout.PromoteRequest{}); code != http.StatusUnauthorized {
		t.Errorf("promoting with a wrong token: %d, want 401", code)
	}

	// Switchover.
	designate(t, my, designations["db-0"], "db-1", 2)
	designate(t, my, designations["db-1"], "db-1", 2)
	code, answer := db0.post(t, layout.DemotePath, "repl-pass", layout.DemoteRequest{Epoch: 2})
	var demoted layout.DemoteResponse
	if code != http.StatusOK || json.Unmarshal([]byte(answer), &demoted) != nil || demoted.Position == "" {
		t.Fatalf("demoting db-0: %d %s", code, answer)
	}
	if err := db0.waitExit(t, time.Minute); err == nil || !strings.Contains(db0.printed(), "demoted") {
		t.Errorf("the demoted primary's program did not exit saying so (%v)", err)
	}
	eventually(t, 30*time.Second, "db-1 executed db-0's last GTID "+demoted.Position, func() error {
		if pos := db1.status(t)["position"]; pos != demoted.Position {
			return fmt.Errorf("db-1 at %v", pos)
		}
		return nil
	})
	if code, answer := db1.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 2}); code != http.StatusOK {
		t.Fatalf("promoting db-1: %d %s", code, answer)
	}
	if role := db1.status(t)["role"]; role != "primary" {
		t.Errorf("db-1 reports %v after its promotion", role)
	}
	write("db-1", "INSERT INTO orders SELECT seq FROM seq_1001_to_1500")
	db0 = start(t, my, path, following("db-0", "db-1", db1)...)
	if out := db0.printed(); strings.Contains(out, "bootstrapping") {
		t.Errorf("the cleanly demoted primary cloned again:\n%s", out)
	}
	expectRows("db-0", 1500)
	if role := db0.status(t)["role"]; role != "replica" {
		t.Errorf("the former primary reports %v", role)
	}

	// Failover while db-1 still runs and takes a write db-0 never sees.
	designate(t, my, designations["db-0"], "db-0", 3)
	if code, answer := db0.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 3}); code != http.StatusOK {
		t.Fatalf("promoting db-0: %d %s", code, answer)
	}
	write("db-0", "INSERT INTO orders SELECT seq FROM seq_1501_to_1600")
	write("db-1", "INSERT INTO orders VALUES (-1)")
	designate(t, my, designations["db-1"], "db-0", 3)
	if err := db1.waitExit(t, 30*time.Second); err == nil || !strings.Contains(db1.printed(), "the designation (epoch 3) names db-0") {
		t.Errorf("the replaced primary did not demote itself (%v):\n%s", err, db1.printed())
	}
	// Its rejoin asks db-0 for a GTID db-0 never had: refused, so it
	// empties its data and exits, and the next start clones db-0.
	db1 = launch(t, my, path, following("db-1", "db-0", db0)...)
	if err := db1.waitExit(t, 2*time.Minute); err == nil || !strings.Contains(db1.printed(), recloneMessage) {
		t.Errorf("the diverged former primary did not give up its data (%v):\n%s", err, db1.printed())
	}
	db1 = start(t, my, path, following("db-1", "db-0", db0)...)
	expectRows("db-1", 1600)
	conn, err := mysqlConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var diverged int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE id = -1").Scan(&diverged); err != nil || diverged != 0 {
		t.Errorf("the diverged write survived: %d %v", diverged, err)
	}
	conn.Close()
	db1.stop(t)
	db0.stop(t)
}

// TestFencing fences a PostgreSQL primary through its instance program: the
// engine stops cleanly and stays stopped across restarts (not ready, alive,
// reporting itself fenced, its port closed) until it is unfenced; then it
// serves its data again. Both requests need the replication password.
func TestFencing(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	dir := pg.workDir(t)
	creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
	sockets := pg.mkdir(t, filepath.Join(dir, "run"))
	designation := pg.mkdir(t, filepath.Join(dir, "designation"))
	designate(t, pg, designation, "db-0", 1)
	credentials(t, pg, creds, "shop", "app-pass", "super-pass")
	pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
	port := freePort(t)
	pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\n", port, sockets))
	args := []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
		"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
		"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds, "--instance-name=db-0",
		"--replication-password-file=" + filepath.Join(dir, "replication-password"),
		"--designation-dir=" + designation, "--clone-from=127.0.0.1"}
	p := start(t, pg, path, args...)
	app, err := pgConnect(ctx, port, "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, "CREATE TABLE kept AS SELECT 1 AS id"); err != nil {
		t.Fatal(err)
	}
	app.Close(ctx)

	if code, _ := p.post(t, layout.FencePath, "wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("fencing with a wrong token: %d, want 401", code)
	}
	if code, answer := p.post(t, layout.FencePath, "repl-pass", nil); code != http.StatusOK {
		t.Fatalf("fencing: %d %s", code, answer)
	}
	if err := p.waitExit(t, 30*time.Second); err == nil || !strings.Contains(p.printed(), "fenced") {
		t.Errorf("the fenced program did not stop its engine and exit (%v)", err)
	}
	p = launch(t, pg, path, args...)
	eventually(t, 30*time.Second, "the fenced instance answers", func() error {
		if code, body := p.readiness(); code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced") {
			return fmt.Errorf("readiness %d %s", code, body)
		}
		return nil
	})
	if status := p.status(t); status["fenced"] != true {
		t.Errorf("the fenced instance reports %v", status)
	}
	if _, err := pgConnect(ctx, port, "shop", "app-pass", "shop"); err == nil {
		t.Error("a fenced instance's engine takes sessions")
	}
	if code, answer := p.post(t, layout.UnfencePath, "repl-pass", nil); code != http.StatusOK {
		t.Fatalf("unfencing: %d %s", code, answer)
	}
	if err := p.waitExit(t, 30*time.Second); err == nil || !strings.Contains(p.printed(), "unfenced") {
		t.Errorf("the unfenced program did not exit to start again (%v)", err)
	}
	p = start(t, pg, path, args...)
	app, err = pgConnect(ctx, port, "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	var n int
	if err := app.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Errorf("the data after unfencing: %d %v", n, err)
	}
	p.stop(t)
}
