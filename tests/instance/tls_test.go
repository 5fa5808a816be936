package instance_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// certificates is a certificate authority and the server certificates it
// issues for localhost (and 127.0.0.1, the host replicas connect to),
// written as the kubelet mounts the Secret: root's
// files of mode 0440, readable through the engine user's group.
type certificates struct {
	authority pki.KeyPair
	dir       string
	gid       uint32
}

func newCertificates(t *testing.T, u osUser) *certificates {
	t.Helper()
	authority, err := pki.NewAuthority("test authority", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(u.workDir(t), "tls")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &certificates{authority: authority, dir: dir, gid: u.gid}
	c.issue(t)
	return c
}

// issue writes a new server certificate and returns its serial number.
func (c *certificates) issue(t *testing.T) *big.Int {
	t.Helper()
	server := c.newServer(t)
	c.write(t, server)
	return serialOf(t, server)
}

// issueUnloadable writes a new server certificate with another one's key,
// which no server can load, and returns the certificate with its own key.
func (c *certificates) issueUnloadable(t *testing.T) pki.KeyPair {
	t.Helper()
	server, other := c.newServer(t), c.newServer(t)
	c.write(t, pki.KeyPair{CertPEM: server.CertPEM, KeyPEM: other.KeyPEM})
	return server
}

func serialOf(t *testing.T, server pki.KeyPair) *big.Int {
	t.Helper()
	cert, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber
}

func (c *certificates) newServer(t *testing.T) pki.KeyPair {
	t.Helper()
	server, err := pki.IssueServer(c.authority, []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return server
}

// write mounts server's certificate and key and the authority, each file
// replaced at once, the key first.
func (c *certificates) write(t *testing.T, server pki.KeyPair) {
	t.Helper()
	c.writeFile(t, layout.KeyTLSKey, server.KeyPEM)
	c.writeFile(t, layout.KeyTLSCert, server.CertPEM)
	c.writeFile(t, layout.KeyCACert, c.authority.CertPEM)
}

// writeFile replaces the named file at once, as root's of mode 0440 in
// the engine user's group.
func (c *certificates) writeFile(t *testing.T, name string, content []byte) {
	t.Helper()
	tmp := filepath.Join(c.dir, "."+name)
	if err := os.WriteFile(tmp, content, 0o440); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 0, int(c.gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o440); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, name)); err != nil {
		t.Fatal(err)
	}
}

// followPoll is how often the instance program looks at its mounted files.
const followPoll = 2 * time.Second

// clientConfig verifies the server as localhost against the authority and
// records the serial number of the certificate each handshake saw.
func (c *certificates) clientConfig(t *testing.T) (*tls.Config, func() *big.Int) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.authority.CertPEM) {
		t.Fatal("the authority's certificate does not parse")
	}
	var mu sync.Mutex
	var seen *big.Int
	config := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12,
		VerifyConnection: func(state tls.ConnectionState) error {
			mu.Lock()
			defer mu.Unlock()
			seen = state.PeerCertificates[0].SerialNumber
			return nil
		}}
	return config, func() *big.Int {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// TestPostgresServesTLS starts PostgreSQL through the instance program
// with a mounted server certificate: a client verifying it against the
// authority (sslmode=verify-full) connects over TLS, and once the
// certificate is renewed in place the server serves the new one without a
// restart.
func TestPostgresServesTLS(t *testing.T) {
	pg := lookup(t, "postgres")
	port := freePort(t)
	certs := newCertificates(t, pg)
	p := start(t, pg, "/usr/lib/postgresql/15/bin:/usr/bin:/bin", pgInstanceArgs(t, pg, "db-0", port, certs.dir)...)
	defer p.stop(t)

	config, served := certs.clientConfig(t)
	connect := func() (bool, error) { return pgSSL(port, "verify-full", config) }
	if ssl, err := connect(); err != nil || !ssl {
		t.Fatalf("a session verifying the server certificate: ssl %t, %v", ssl, err)
	}
	first := served()
	checkInstanceServesTLS(t, p, config)
	firstDigest := expectMountedDigests(t, p, certs)

	// Past the program's first polls (the first one reloads the
	// configuration anyway), so only following the certificate can serve
	// the renewed one.
	time.Sleep(3 * followPoll)
	renewed := certs.issue(t)
	eventually(t, 15*time.Second, "the renewed certificate is served", func() error {
		if _, err := connect(); err != nil {
			return err
		}
		if served().Cmp(renewed) != 0 {
			return fmt.Errorf("serial %s served, the renewed one is %s (the first %s)", served(), renewed, first)
		}
		return nil
	})
	renewedDigest := expectMountedDigests(t, p, certs)
	if renewedDigest == firstDigest {
		t.Errorf("/status reports the same certificate digest after the renewal")
	}
	expectUnloadableKeepsServing(t, p, certs, renewedDigest, func() (*big.Int, error) {
		_, err := connect()
		return served(), err
	})
}

// expectUnloadableKeepsServing mounts a certificate no server can load (its
// key is another's) and expects the engine to keep serving the certificate
// it serves, and its program to go on reporting that one (digest) served
// beside the unloadable one mounted, over several of the program's polls;
// then, with the certificate's own key mounted, the program to have the
// engine load it and report it served. serial opens a session and returns
// the serial number of the certificate it saw.
func expectUnloadableKeepsServing(t *testing.T, p *program, certs *certificates, digest string, serial func() (*big.Int, error)) {
	t.Helper()
	before, err := serial()
	if err != nil {
		t.Fatal(err)
	}
	unloadable := certs.issueUnloadable(t)
	mounted := fileDigest(t, certs.dir, layout.KeyTLSCert)
	eventually(t, 15*time.Second, "the unloadable certificate reported mounted", func() error {
		got, err := certificateReport(p)
		if err == nil && got.MountedCertificate != mounted {
			err = fmt.Errorf("reported %+v", got)
		}
		return err
	})
	for range 6 {
		time.Sleep(followPoll)
		got, err := certificateReport(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.ServedCertificate != digest {
			t.Fatalf("with a certificate it cannot load mounted, the engine is reported to serve %q; it serves the former one, %s", got.ServedCertificate, digest)
		}
		if now, err := serial(); err != nil || now.Cmp(before) != 0 {
			t.Fatalf("with a certificate it cannot load mounted, a session saw serial %s (%v), want the former %s", now, err, before)
		}
	}
	// Its own key mounted, the certificate file unchanged: only asking the
	// engine again to load it serves it (10 s after the first time it was
	// asked, then 20 s after that).
	certs.writeFile(t, layout.KeyTLSKey, unloadable.KeyPEM)
	want := serialOf(t, unloadable)
	eventually(t, time.Minute, "the certificate served once its own key is mounted", func() error {
		now, err := serial()
		if err == nil && now.Cmp(want) != 0 {
			err = fmt.Errorf("serial %s served, the certificate mounted is %s", now, want)
		}
		return err
	})
	expectMountedDigests(t, p, certs)
}

// certificateReport is what the program answers at /certificates.
func certificateReport(p *program) (layout.CertificateStatus, error) {
	var got layout.CertificateStatus
	resp, err := p.client.Get(strings.Replace(p.probe, "/readyz", layout.CertificatesPath, 1))
	if err != nil {
		return got, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&got)
	return got, err
}

func fileDigest(t *testing.T, dir, name string) string {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return layout.FileDigest(content)
}

// expectMountedDigests expects the program to report at /certificates the
// digests of the certificate and the authorities mounted in certs.dir, and
// the engine serving that certificate once it has reloaded it; it returns
// the certificate's digest.
func expectMountedDigests(t *testing.T, p *program, certs *certificates) string {
	t.Helper()
	certificate := fileDigest(t, certs.dir, layout.KeyTLSCert)
	want := layout.CertificateStatus{MountedCertificate: certificate, MountedAuthorities: fileDigest(t, certs.dir, layout.KeyCACert), ServedCertificate: certificate}
	eventually(t, 15*time.Second, "the mounted files' digests reported", func() error {
		got, err := certificateReport(p)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("reported %+v, want %+v", got, want)
		}
		return nil
	})
	return want.MountedCertificate
}

// TestMariaDBServesTLS is TestPostgresServesTLS for MariaDB.
func TestMariaDBServesTLS(t *testing.T) {
	my := lookup(t, "mysql")
	port := freePort(t)
	certs := newCertificates(t, my)
	p := start(t, my, "/usr/sbin:/usr/bin:/bin", mariadbInstanceArgs(t, my, port, certs.dir)...)
	defer p.stop(t)

	config, served := certs.clientConfig(t)
	connect := func() (string, error) { return mariadbCipher(port, config) }
	if cipher, err := connect(); err != nil || cipher == "" {
		t.Fatalf("a session verifying the server certificate: cipher %q, %v", cipher, err)
	}
	expectMountedDigests(t, p, certs)
	time.Sleep(3 * followPoll)
	renewed := certs.issue(t)
	eventually(t, 15*time.Second, "the renewed certificate is served", func() error {
		if _, err := connect(); err != nil {
			return err
		}
		if served().Cmp(renewed) != 0 {
			return errors.New("the first certificate is still served")
		}
		return nil
	})
	expectUnloadableKeepsServing(t, p, certs, expectMountedDigests(t, p, certs), func() (*big.Int, error) {
		_, err := connect()
		return served(), err
	})
}

// mariadbInstanceArgs are the instance program's arguments for a MariaDB
// instance in its own directory, listening on port, with the TLS directory.
func mariadbInstanceArgs(t *testing.T, my osUser, port int, tlsDir string) []string {
	t.Helper()
	dir := my.workDir(t)
	creds := my.mkdir(t, filepath.Join(dir, "credentials"))
	run := my.mkdir(t, filepath.Join(dir, "run"))
	credentials(t, my, creds, "shop", "app-pass", "super-pass")
	my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
		"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\n", port))
	return []string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
		"--socket=" + filepath.Join(run, "mysqld.sock"), "--defaults-file=" + filepath.Join(dir, "my.cnf"),
		"--credentials-dir=" + creds, "--tls-dir=" + tlsDir}
}

// mariadbCipher opens a session as the application user, over TLS with
// config when it is set (without TLS when nil), and returns the session's
// cipher.
func mariadbCipher(port int, config *tls.Config) (string, error) {
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "shop", "app-pass", "shop"
	cfg.Timeout, cfg.TLS = 5*time.Second, config
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var name, cipher string
	err = db.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher)
	return cipher, err
}

// pgSSL opens a session as the application user with sslmode (over TLS
// with config for verify-full) and reads whether it is encrypted.
func pgSSL(port int, sslmode string, config *tls.Config) (bool, error) {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d user=shop password=app-pass dbname=shop sslmode=%s connect_timeout=5", port, sslmode))
	if err != nil {
		return false, err
	}
	if config != nil {
		cfg.TLSConfig = config
	}
	cfg.Fallbacks = nil
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var ssl bool
	err = conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl)
	return ssl, err
}

// TestRequiredTLSRefusesSessionsWithout starts each engine with TLS
// served but not required, where a session without TLS works, then
// restarts it on the same data with TLS required: a session over verified
// TLS works, one without TLS is refused.
func TestRequiredTLSRefusesSessionsWithout(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pg := lookup(t, "postgres")
		port := freePort(t)
		certs := newCertificates(t, pg)
		path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
		args := pgInstanceArgs(t, pg, "db-0", port, certs.dir)
		p := start(t, pg, path, args...)
		if ssl, err := pgSSL(port, "disable", nil); err != nil || ssl {
			t.Errorf("without TLS required, a session without TLS: ssl %t, %v", ssl, err)
		}
		p.stop(t)
		p = start(t, pg, path, append(args, "--require-tls")...)
		defer p.stop(t)
		config, _ := certs.clientConfig(t)
		if ssl, err := pgSSL(port, "verify-full", config); err != nil || !ssl {
			t.Errorf("a session over verified TLS: ssl %t, %v", ssl, err)
		}
		if _, err := pgSSL(port, "disable", nil); err == nil || !strings.Contains(err.Error(), "no encryption") {
			t.Errorf("a session without TLS was not refused for it: %v", err)
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		my := lookup(t, "mysql")
		port := freePort(t)
		certs := newCertificates(t, my)
		path := "/usr/sbin:/usr/bin:/bin"
		args := mariadbInstanceArgs(t, my, port, certs.dir)
		p := start(t, my, path, args...)
		if cipher, err := mariadbCipher(port, nil); err != nil || cipher != "" {
			t.Errorf("without TLS required, a session without TLS: cipher %q, %v", cipher, err)
		}
		p.stop(t)
		p = start(t, my, path, append(args, "--require-tls")...)
		defer p.stop(t)
		config, _ := certs.clientConfig(t)
		if cipher, err := mariadbCipher(port, config); err != nil || cipher == "" {
			t.Errorf("a session over verified TLS: cipher %q, %v", cipher, err)
		}
		// MariaDB refuses an insecure session as it refuses a wrong
		// password (MySQL names the transport).
		if _, err := mariadbCipher(port, nil); err == nil || !(strings.Contains(err.Error(), "insecure transport") || strings.Contains(err.Error(), "Error 1045")) {
			t.Errorf("a session without TLS was not refused: %v", err)
		}
	})
}

// verifyFull finds sslmode=verify-full in a conninfo, quoted or not.
var verifyFull = regexp.MustCompile(`(^|\s)sslmode='?verify-full'?(\s|$)`)

// pgInstanceArgs are the instance program's arguments for a PostgreSQL
// instance in its own directory (name, port), with the TLS directory when
// tlsDir is set.
func pgInstanceArgs(t *testing.T, pg osUser, name string, port int, tlsDir string) []string {
	t.Helper()
	dir := pg.workDir(t)
	creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
	sockets := pg.mkdir(t, filepath.Join(dir, "run"))
	credentials(t, pg, creds, "shop", "app-pass", "super-pass")
	pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
	pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\nhot_standby = on\n", port, sockets))
	args := []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
		"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
		"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds,
		"--instance-name=" + name, "--replication-password-file=" + filepath.Join(dir, "replication-password")}
	if tlsDir != "" {
		args = append(args, "--tls-dir="+tlsDir)
	}
	return args
}

// TestPostgresReplicationVerifiesThePrimary starts a primary without a
// certificate (a pod from before dbpilot issued them) and a replica with
// one: the replica clones and streams all the same, and once the primary
// is restarted with its certificate the replica switches to verify-full
// without a restart, its WAL sender on the primary using TLS. A replica
// cloned from then on verifies the primary from the start.
func TestPostgresReplicationVerifiesThePrimary(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	certs := newCertificates(t, pg)
	primaryPort, replicaPort, secondPort := freePort(t), freePort(t), freePort(t)
	primaryArgs := pgInstanceArgs(t, pg, "db-0", primaryPort, "")
	primary := start(t, pg, path, primaryArgs...)
	cloneFrom := []string{"--clone-from=127.0.0.1", "--clone-port=" + strconv.Itoa(primaryPort)}
	replica := start(t, pg, path, append(pgInstanceArgs(t, pg, "db-1", replicaPort, certs.dir), cloneFrom...)...)

	conninfo := func(port int) string {
		conn, err := pgConnect(ctx, port, "postgres", "super-pass", "postgres")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var info string
		if err := conn.QueryRow(ctx, "SELECT current_setting('primary_conninfo')").Scan(&info); err != nil {
			t.Fatal(err)
		}
		return info
	}
	// Which WAL senders of the primary use TLS, by application name (the
	// replica's slot).
	sendersOf := func() map[string]bool {
		conn, err := pgConnect(ctx, primaryPort, "postgres", "super-pass", "postgres")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, "SELECT application_name, ssl FROM pg_stat_replication JOIN pg_stat_ssl USING (pid)")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		senders := map[string]bool{}
		for rows.Next() {
			var name string
			var ssl bool
			if err := rows.Scan(&name, &ssl); err != nil {
				t.Fatal(err)
			}
			senders[name] = ssl
		}
		return senders
	}
	if info := conninfo(replicaPort); verifyFull.MatchString(info) {
		t.Fatalf("the replica verifies a primary that serves no TLS: %s", info)
	}
	if got := sendersOf(); len(got) != 1 || got["db_1"] {
		t.Fatalf("WAL senders %v, want db_1 without TLS", got)
	}

	// The primary restarts with its certificate.
	primary.stop(t)
	primary = start(t, pg, path, append(primaryArgs, "--tls-dir="+certs.dir)...)
	defer primary.stop(t)
	eventually(t, 90*time.Second, "the replica verifies the primary", func() error {
		if info := conninfo(replicaPort); !verifyFull.MatchString(info) {
			return fmt.Errorf("primary_conninfo without verify-full")
		}
		if got := sendersOf(); !got["db_1"] {
			return fmt.Errorf("WAL senders %v", got)
		}
		return nil
	})

	second := start(t, pg, path, append(pgInstanceArgs(t, pg, "db-2", secondPort, certs.dir), cloneFrom...)...)
	if info := conninfo(secondPort); !verifyFull.MatchString(info) {
		t.Errorf("a replica cloned from a primary serving TLS does not verify it: %s", info)
	}
	// The server logs primary_conninfo when a reload changes it: it names
	// the password's file, and the password appears nowhere.
	for _, p := range []*program{primary, replica, second} {
		if strings.Contains(p.printed(), "repl-pass") {
			t.Errorf("the replication password appears in an instance's output")
		}
	}
	eventually(t, 15*time.Second, "the new replica streams over TLS", func() error {
		if got := sendersOf(); !got["db_2"] {
			return fmt.Errorf("WAL senders %v", got)
		}
		return nil
	})
}

// TestMariaDBReplicationVerifiesThePrimary is
// TestPostgresReplicationVerifiesThePrimary for MariaDB.
func TestMariaDBReplicationVerifiesThePrimary(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	path := "/usr/sbin:/usr/bin:/bin"
	certs := newCertificates(t, my)
	ports := map[string]int{}
	args := map[string][]string{}
	sockets := map[string]string{}
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		dir := my.workDir(t)
		creds := my.mkdir(t, filepath.Join(dir, "credentials"))
		run := my.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, my, creds, "shop", "app-pass", "super-pass")
		my.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		ports[name] = freePort(t)
		sockets[name] = filepath.Join(run, "mysqld.sock")
		my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
			"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\nlog-bin = binlog\n", ports[name]))
		args[name] = []string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
			"--socket=" + sockets[name], "--defaults-file=" + filepath.Join(dir, "my.cnf"),
			"--credentials-dir=" + creds, "--instance-name=" + name,
			"--replication-password-file=" + filepath.Join(dir, "replication-password")}
	}
	primary := start(t, my, path, args["db-0"]...)
	cloneFrom := []string{"--clone-from=127.0.0.1", "--clone-port=" + strconv.Itoa(ports["db-0"]), "--clone-instance-port=" + primary.instancePort()}
	start(t, my, path, append(args["db-1"], append(cloneFrom, "--tls-dir="+certs.dir)...)...)

	replicaTLS := func(name string) (allowed, verified string) {
		cfg := mysqldriver.NewConfig()
		cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "unix", sockets[name], "root", "super-pass"
		connector, err := mysqldriver.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		root := sql.OpenDB(connector)
		defer root.Close()
		rows, err := root.QueryContext(ctx, "SHOW REPLICA STATUS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		columns, _ := rows.Columns()
		values := make([]sql.NullString, len(columns))
		pointers := make([]any, len(columns))
		for i := range values {
			pointers[i] = &values[i]
		}
		if !rows.Next() {
			t.Fatalf("%s is no replica", name)
		}
		if err := rows.Scan(pointers...); err != nil {
			t.Fatal(err)
		}
		fields := map[string]string{}
		for i, c := range columns {
			fields[c] = values[i].String
		}
		return fields["Master_SSL_Allowed"], fields["Master_SSL_Verify_Server_Cert"]
	}
	if allowed, _ := replicaTLS("db-1"); allowed != "No" {
		t.Fatalf("the replica uses TLS with a primary that serves none: %s", allowed)
	}

	// The primary restarts with its certificate.
	primary.stop(t)
	primary = start(t, my, path, append(args["db-0"], "--tls-dir="+certs.dir)...)
	defer primary.stop(t)
	eventually(t, 90*time.Second, "the replica verifies the primary", func() error {
		if allowed, verified := replicaTLS("db-1"); allowed != "Yes" || verified != "Yes" {
			return fmt.Errorf("Master_SSL_Allowed %s, Master_SSL_Verify_Server_Cert %s", allowed, verified)
		}
		return nil
	})
	app, err := mysqlConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(ctx, "INSERT INTO orders SELECT seq FROM seq_1_to_100"); err != nil {
		t.Fatal(err)
	}
	// Cloned over HTTPS, from the primary's instance program that serves
	// its certificate now.
	if !strings.HasPrefix(primary.probe, "https://") {
		t.Fatalf("the primary serves its instance program without TLS: %s", primary.probe)
	}
	start(t, my, path, append(args["db-2"], "--clone-from=127.0.0.1", "--clone-port="+strconv.Itoa(ports["db-0"]),
		"--clone-instance-port="+primary.instancePort(), "--tls-dir="+certs.dir)...)
	if allowed, verified := replicaTLS("db-2"); allowed != "Yes" || verified != "Yes" {
		t.Errorf("a replica cloned from a primary serving TLS: Master_SSL_Allowed %s, Master_SSL_Verify_Server_Cert %s", allowed, verified)
	}
	for _, name := range []string{"db-1", "db-2"} {
		eventually(t, 30*time.Second, name+" replicates over TLS", func() error {
			db, err := mysqlConnect(ctx, ports[name], "shop", "app-pass", "shop")
			if err != nil {
				return err
			}
			defer db.Close()
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil {
				return err
			}
			if n != 100 {
				return fmt.Errorf("%d rows", n)
			}
			return nil
		})
	}
}

// checkInstanceServesTLS expects the instance program to serve /status
// over HTTPS with the certificate, as the operator reads it (verifying
// it), and nothing over plain HTTP.
func checkInstanceServesTLS(t *testing.T, p *program, config *tls.Config) {
	t.Helper()
	verifying := &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
	status := strings.Replace(p.probe, "/readyz", layout.StatusPath, 1)
	resp, err := verifying.Get(status)
	if err != nil {
		t.Fatalf("/status over verified HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/status over verified HTTPS: %s", resp.Status)
	}
	resp, err = http.Get(strings.Replace(status, "https://", "http://", 1))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("/status is served over plain HTTP too")
		}
	}
}
