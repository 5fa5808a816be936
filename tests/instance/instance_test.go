// Package instance_test runs the instance program itself, as a plain
// process on 127.0.0.1, against the machine's PostgreSQL 15 and MariaDB
// 10.11 (Debian packages): bootstrap, the users and their privileges,
// password rotation without a restart, a clean shutdown, and no password in
// what it prints.
package instance_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

var (
	buildOnce  sync.Once
	binaryPath string
	buildErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// instanceBinary builds cmd/instance once for the package.
func instanceBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := localcluster.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "dbpilot-instance-bin-")
		if err != nil {
			buildErr = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		binaryPath = filepath.Join(dir, "instance")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/instance")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the instance program: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binaryPath
}

// osUser is the service account the engine runs as (PostgreSQL and MariaDB
// refuse root), as in a pod.
type osUser struct{ uid, gid uint32 }

func lookup(t testing.TB, name string) osUser {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no %s user (make deps installs the engines): %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return osUser{uint32(uid), uint32(gid)}
}

// workDir is a directory the user owns, removed after the test.
func (u osUser) workDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbpilot-instance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, int(u.uid), int(u.gid)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeFile writes a file the user owns, atomically (as the kubelet
// updates a mounted Secret).
func (u osUser) writeFile(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, int(u.uid), int(u.gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func (u osUser) mkdir(t testing.TB, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, int(u.uid), int(u.gid)); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// program is a running instance program.
type program struct {
	cmd    *exec.Cmd
	output *bytes.Buffer
	mu     *sync.Mutex
	done   chan error
	probe  string
	// client asks the probes as the kubelet does: over HTTPS without
	// verifying the certificate when the program serves one.
	client *http.Client
}

func (p *program) printed() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// start runs the instance program as the user with args, and waits until
// its readiness probe answers.
func start(t testing.TB, u osUser, path string, args ...string) *program {
	t.Helper()
	return startWithEnv(t, u, path, nil, args...)
}

// startWithEnv is start with more environment variables.
func startWithEnv(t testing.TB, u osUser, path string, env []string, args ...string) *program {
	t.Helper()
	p := launchWithEnv(t, u, path, env, args...)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if code, _ := p.readiness(); code == http.StatusOK {
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err // for the cleanup
			t.Fatalf("the instance program exited: %v\n%s", err, p.printed())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance program never turned ready:\n%s", p.printed())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits for the program to exit on its own and returns how.
func (p *program) waitExit(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(timeout):
		t.Fatalf("the instance program did not exit within %s:\n%s", timeout, p.printed())
		return nil
	}
}

// launch runs the instance program as the user with args.
func launch(t testing.TB, u osUser, path string, args ...string) *program {
	t.Helper()
	return launchWithEnv(t, u, path, nil, args...)
}

// launchWithEnv is launch with more environment variables.
func launchWithEnv(t testing.TB, u osUser, path string, env []string, args ...string) *program {
	t.Helper()
	probePort := freePort(t)
	args = append(args, fmt.Sprintf("--probe-address=127.0.0.1:%d", probePort))
	cmd := exec.Command(instanceBinary(t), append([]string{"run"}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append([]string{"PATH=" + path, "LANG=C.UTF-8"}, env...)
	scheme, client := "http", http.DefaultClient
	for _, arg := range args {
		if strings.HasPrefix(arg, "--tls-dir=") {
			scheme = "https"
			client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		}
	}
	p := &program{cmd: cmd, output: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan error, 1),
		probe: fmt.Sprintf("%s://127.0.0.1:%d/readyz", scheme, probePort), client: client}
	cmd.Stdout = lockedWriter{p.mu, p.output}
	cmd.Stderr = lockedWriter{p.mu, p.output}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
			// Reaped already: its group's number may be another's by now.
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
			}
		}
		if t.Failed() {
			t.Logf("instance program output:\n%s", p.printed())
		}
	})
	return p
}

// stop sends SIGTERM, as the kubelet does, and expects a clean exit.
func (p *program) stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the instance program did not exit cleanly: %v\n%s", err, p.printed())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the instance program did not stop within 60s of SIGTERM")
	}
}

// eventually retries check for up to timeout.
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func credentials(t testing.TB, u osUser, dir, username, password, superuser string) {
	t.Helper()
	u.writeFile(t, filepath.Join(dir, "username"), username)
	u.writeFile(t, filepath.Join(dir, "password"), password)
	u.writeFile(t, filepath.Join(dir, "superuser-password"), superuser)
}

func pgConnect(ctx context.Context, port int, user, password, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = "127.0.0.1", uint16(port), user, password, database
	cfg.ConnectTimeout = 5 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

func TestPostgresInstance(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	setup := postgresSetup(t, pg)
	dir, creds, port, path := setup.dir, setup.creds, setup.port, setup.path
	monitoringFile := filepath.Join(dir, "monitoring-password")
	pg.writeFile(t, monitoringFile, "monitor-pass-1")
	args := append(setup.args, "--monitoring-password-file="+monitoringFile)
	p := start(t, pg, path, args...)

	app, err := pgConnect(ctx, port, "shop", "app-pass-1", "shop")
	if err != nil {
		t.Fatalf("the application user cannot log in: %v", err)
	}
	var super, createRole, createDB bool
	if err := app.QueryRow(ctx, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&super, &createRole, &createDB); err != nil {
		t.Fatal(err)
	}
	if super || createRole || createDB {
		t.Errorf("the application user is privileged: superuser=%t createrole=%t createdb=%t", super, createRole, createDB)
	}
	if _, err := app.Exec(ctx, "CREATE TABLE orders (id int)"); err != nil {
		t.Errorf("the application user cannot create a table in its database: %v", err)
	}
	if _, err := app.Exec(ctx, "CREATE ROLE intruder SUPERUSER"); err == nil {
		t.Error("the application user created a superuser")
	}
	app.Close(ctx)
	if _, err := pgConnect(ctx, port, "shop", "app-pass-1", "postgres"); err == nil {
		t.Error("the application user connects to another database")
	}
	admin, err := pgConnect(ctx, port, "postgres", "super-pass-1", "postgres")
	if err != nil {
		t.Fatalf("the superuser cannot log in with superuser-password: %v", err)
	}
	// A table the monitoring user could write if it were allowed to.
	if _, err := admin.Exec(ctx, "CREATE TABLE probe (id int); GRANT ALL ON probe TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	checkPostgresMonitoring(ctx, t, port, "monitor-pass-1")

	// Rotation: the Secret's files change; the running engine follows.
	pg.writeFile(t, monitoringFile, "monitor-pass-2")
	credentials(t, pg, creds, "shop", "app-pass-2", "super-pass-2")
	eventually(t, 15*time.Second, "the rotated application password works", func() error {
		conn, err := pgConnect(ctx, port, "shop", "app-pass-2", "shop")
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
	if conn, err := pgConnect(ctx, port, "shop", "app-pass-1", "shop"); err == nil {
		conn.Close(ctx)
		t.Error("the old application password still works after rotation")
	}
	if _, err := pgConnect(ctx, port, "postgres", "super-pass-2", "postgres"); err != nil {
		t.Errorf("the rotated superuser password does not work: %v", err)
	}
	if conn, err := pgConnect(ctx, port, "dbpilot_monitoring", "monitor-pass-2", "postgres"); err != nil {
		t.Errorf("the rotated monitoring password does not work: %v", err)
	} else {
		conn.Close(ctx)
	}
	p.stop(t)
	out := p.printed()
	if !strings.Contains(out, "shutdown") {
		t.Errorf("no clean shutdown in the output:\n%s", out)
	}
	for _, secret := range []string{"app-pass-1", "app-pass-2", "super-pass-1", "super-pass-2", "monitor-pass-1", "monitor-pass-2"} {
		if strings.Contains(out, secret) {
			t.Errorf("a password appears in the instance program's output")
		}
	}

	// A second start finds the cluster and keeps the data.
	p = start(t, pg, path, args...)
	app, err = pgConnect(ctx, port, "shop", "app-pass-2", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, "SELECT count(*) FROM orders"); err != nil {
		t.Errorf("the table is gone after a restart: %v", err)
	}
	app.Close(ctx)
	p.stop(t)
}

func mysqlConnect(ctx context.Context, port int, user, password, database string) (*sql.DB, error) {
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), user, password, database
	cfg.Timeout = 5 * time.Second
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func TestMariaDBInstance(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	setup := mariadbSetup(t, my)
	dir, creds, port, path := setup.dir, setup.creds, setup.port, setup.path
	monitoringFile := filepath.Join(dir, "monitoring-password")
	my.writeFile(t, monitoringFile, "monitor-pass-1")
	args := append(setup.args, "--monitoring-password-file="+monitoringFile)
	p := start(t, my, path, args...)

	app, err := mysqlConnect(ctx, port, "shop", "app-pass-1", "shop")
	if err != nil {
		t.Fatalf("the application user cannot log in: %v", err)
	}
	if _, err := app.ExecContext(ctx, "CREATE TABLE orders (id int)"); err != nil {
		t.Errorf("the application user cannot create a table in its database: %v", err)
	}
	if _, err := app.ExecContext(ctx, "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'"); err == nil {
		t.Error("the application user created a user")
	}
	// Its grant option grants its database's privileges to a user that
	// exists, nothing more.
	for _, stmt := range []string{"GRANT SELECT ON shop.* TO 'ghost'@'%' IDENTIFIED BY 'x'", "GRANT SELECT ON mysql.* TO 'shop'@'%'", "GRANT SELECT ON *.* TO 'shop'@'%'"} {
		if _, err := app.ExecContext(ctx, stmt); err == nil {
			t.Errorf("the application user: %s succeeded", stmt)
		}
	}
	if _, err := app.ExecContext(ctx, "SELECT count(*) FROM mysql.user"); err == nil {
		t.Error("the application user reads the system database")
	}
	// The application's session is open: the monitoring user must see it.
	checkMariaDBMonitoring(ctx, t, port, "monitor-pass-1")
	app.Close()
	if _, err := mysqlConnect(ctx, port, "root", "super-pass-1", ""); err == nil {
		t.Error("root logs in over the network")
	}

	my.writeFile(t, monitoringFile, "monitor-pass-2")
	credentials(t, my, creds, "shop", "app-pass-2", "super-pass-2")
	eventually(t, 15*time.Second, "the rotated application password works", func() error {
		db, err := mysqlConnect(ctx, port, "shop", "app-pass-2", "shop")
		if err == nil {
			db.Close()
		}
		return err
	})
	if db, err := mysqlConnect(ctx, port, "shop", "app-pass-1", "shop"); err == nil {
		db.Close()
		t.Error("the old application password still works after rotation")
	}
	eventually(t, 15*time.Second, "the rotated monitoring password works", func() error {
		db, err := mysqlConnect(ctx, port, "dbpilot_monitoring", "monitor-pass-2", "")
		if err == nil {
			db.Close()
		}
		return err
	})
	p.stop(t)
	out := p.printed()
	for _, secret := range []string{"app-pass-1", "app-pass-2", "super-pass-1", "super-pass-2", "monitor-pass-1", "monitor-pass-2"} {
		if strings.Contains(out, secret) {
			t.Errorf("a password appears in the instance program's output")
		}
	}
}

// readiness asks the readiness probe once.
func (p *program) readiness() (int, string) {
	resp, err := p.client.Get(p.probe)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// instanceStatus reads a running instance program's /status.
func (p *program) status(t testing.TB) map[string]any {
	t.Helper()
	resp, err := p.client.Get(strings.Replace(p.probe, "/readyz", "/status", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/status answered %s", resp.Status)
	}
	status := map[string]any{}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

// checkRoles expects the primary and the replica to report their roles, a
// position, and the replica to replicate with its lag reported.
func checkRoles(t testing.TB, primary, replica *program) {
	t.Helper()
	p := primary.status(t)
	if p["role"] != "primary" || p["position"] == "" || p["position"] == nil || p["credentialsApplied"] != true {
		t.Errorf("primary's status: %v", p)
	}
	eventually(t, 15*time.Second, "the replica reports itself replicating", func() error {
		r := replica.status(t)
		if r["role"] != "replica" || r["replicating"] != true || r["lagSeconds"] == nil {
			return fmt.Errorf("replica's status: %v", r)
		}
		return nil
	})
}
