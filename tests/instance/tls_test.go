package instance_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// certificates is a certificate authority and the server certificates it
// issues for localhost, written as the kubelet mounts the Secret: root's
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
	server, err := pki.IssueServer(c.authority, []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{layout.KeyTLSCert: server.CertPEM, layout.KeyTLSKey: server.KeyPEM, layout.KeyCACert: c.authority.CertPEM} {
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
	ctx := context.Background()
	dir := pg.workDir(t)
	creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
	sockets := pg.mkdir(t, filepath.Join(dir, "run"))
	port := freePort(t)
	credentials(t, pg, creds, "shop", "app-pass", "super-pass")
	pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\n", port, sockets))
	certs := newCertificates(t, pg)
	p := start(t, pg, "/usr/lib/postgresql/15/bin:/usr/bin:/bin", "--engine=postgres", "--data-dir="+filepath.Join(dir, "pgdata"),
		"--config-file="+filepath.Join(dir, "postgresql.conf"), "--socket="+sockets, "--port="+strconv.Itoa(port),
		"--credentials-dir="+creds, "--tls-dir="+certs.dir)
	defer p.stop(t)

	config, served := certs.clientConfig(t)
	connect := func() (bool, error) {
		cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d user=shop password=app-pass dbname=shop sslmode=verify-full connect_timeout=5", port))
		if err != nil {
			return false, err
		}
		cfg.TLSConfig, cfg.Fallbacks = config, nil
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return false, err
		}
		defer conn.Close(ctx)
		var ssl bool
		err = conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl)
		return ssl, err
	}
	if ssl, err := connect(); err != nil || !ssl {
		t.Fatalf("a session verifying the server certificate: ssl %t, %v", ssl, err)
	}
	first := served()

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
}

// TestMariaDBServesTLS is TestPostgresServesTLS for MariaDB.
func TestMariaDBServesTLS(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	dir := my.workDir(t)
	creds := my.mkdir(t, filepath.Join(dir, "credentials"))
	run := my.mkdir(t, filepath.Join(dir, "run"))
	port := freePort(t)
	credentials(t, my, creds, "shop", "app-pass", "super-pass")
	my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
		"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\n", port))
	certs := newCertificates(t, my)
	p := start(t, my, "/usr/sbin:/usr/bin:/bin", "--engine=mariadb", "--data-dir="+filepath.Join(dir, "data"),
		"--socket="+filepath.Join(run, "mysqld.sock"), "--defaults-file="+filepath.Join(dir, "my.cnf"),
		"--credentials-dir="+creds, "--tls-dir="+certs.dir)
	defer p.stop(t)

	config, served := certs.clientConfig(t)
	connect := func() (string, error) {
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
		err = db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher)
		return cipher, err
	}
	if cipher, err := connect(); err != nil || cipher == "" {
		t.Fatalf("a session verifying the server certificate: cipher %q, %v", cipher, err)
	}
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
}
