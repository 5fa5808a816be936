package instance_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// clientLogin is one way the application user ("shop") tries to log in.
type clientLogin struct {
	name        string
	password    string
	useTLS      bool
	certificate *tls.Certificate
	// succeeds says whether the engine lets it in while the certificate
	// is required.
	succeeds bool
	// foreign is a certificate the client authority did not sign: an
	// engine that verifies client certificates refuses it at the
	// handshake, required or not.
	foreign bool
}

// clientLogins mounts a client authority into certs' directory, as the
// operator adds it to the server certificate Secret, and returns the
// logins to try: with the certificate it issued the user, and with each
// thing wrong in turn.
func clientLogins(t *testing.T, certs *certificates) []clientLogin {
	t.Helper()
	issue := func(authority pki.KeyPair, user string) *tls.Certificate { return issueClient(t, authority, user) }
	clients, err := pki.NewAuthority("test client authority", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certs.writeFile(t, layout.KeyClientCACert, clients.CertPEM)
	own := issue(clients, "shop")
	return []clientLogin{
		{name: "its password and certificate", password: "app-pass", useTLS: true, certificate: own, succeeds: true},
		{name: "its password alone, over TLS", password: "app-pass", useTLS: true},
		{name: "its password alone, without TLS", password: "app-pass"},
		{name: "a wrong password and its certificate", password: "wrong", useTLS: true, certificate: own},
		{name: "its password and another user's certificate", password: "app-pass", useTLS: true, certificate: issue(clients, "other")},
		{name: "its password and a certificate of its name from the server's authority", password: "app-pass", useTLS: true, certificate: issue(certs.authority, "shop"), foreign: true},
		{name: "its password and a certificate of its name from another authority", password: "app-pass", useTLS: true, certificate: issue(mustAuthority(t), "shop"), foreign: true},
	}
}

// issueClient is a client certificate for user from authority.
func issueClient(t *testing.T, authority pki.KeyPair, user string) *tls.Certificate {
	t.Helper()
	pair, err := pki.IssueClient(authority, user, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

func mustAuthority(t *testing.T) pki.KeyPair {
	t.Helper()
	authority, err := pki.NewAuthority("another authority", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return authority
}

// tlsFor is the client's TLS configuration of a login: the server
// verified as localhost, and the login's certificate presented.
func (l clientLogin) tlsFor(t *testing.T, certs *certificates) *tls.Config {
	t.Helper()
	if !l.useTLS {
		return nil
	}
	config, _ := certs.clientConfig(t)
	if l.certificate != nil {
		// Presented whatever authorities the server names (Go's client
		// would otherwise keep back one the server did not ask for).
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return l.certificate, nil }
	}
	return config
}

// expectLogins tries each login: while required, only those that should
// succeed do; while not, every one with the password does, but for those
// with a foreign certificate when the engine verifies client certificates
// all the same (MariaDB: its ssl_ca is the client authority; PostgreSQL
// is given ssl_ca_file only when the certificate is required).
func expectLogins(t *testing.T, logins []clientLogin, required, verifiesAlways bool, login func(clientLogin) error) {
	t.Helper()
	for _, l := range logins {
		want := l.succeeds || (!required && l.password == "app-pass" && !(l.foreign && verifiesAlways))
		err := login(l)
		switch {
		case want && err != nil:
			t.Errorf("certificate required %t: %s was refused: %v", required, l.name, err)
		case !want && err == nil:
			t.Errorf("certificate required %t: %s was let in", required, l.name)
		}
	}
}

// TestClientCertificateRequired starts each engine with the application
// user's client certificate required: only a login with its password and
// a certificate of its name from the client authority gets in. Restarted
// on the same data without it, the password is enough again.
func TestClientCertificateRequired(t *testing.T) {
	for _, engine := range clientCertificateEngines {
		t.Run(engine.name, func(t *testing.T) {
			u := lookup(t, engine.osUser)
			port := freePort(t)
			certs := newCertificates(t, u)
			logins := clientLogins(t, certs)
			args := engine.args(t, u, port, certs.dir)
			login := func(l clientLogin) error { return engine.login(port, l.password, l.tlsFor(t, certs)) }
			p := start(t, u, engine.path, append(args, "--require-client-certificate")...)
			expectLogins(t, logins, true, engine.verifiesAlways, login)
			p.stop(t)
			p = start(t, u, engine.path, args...)
			defer p.stop(t)
			expectLogins(t, logins, false, engine.verifiesAlways, login)
		})
	}
}

// clientCertificateEngines are the engines the client certificate tests
// run, with how to start and log in to each.
var clientCertificateEngines = []struct {
	name, osUser, path string
	args               func(t *testing.T, u osUser, port int, tlsDir string) []string
	login              func(port int, password string, config *tls.Config) error
	// verifiesAlways: the engine verifies a presented certificate even
	// when none is required.
	verifiesAlways bool
}{
	{"postgres", "postgres", "/usr/lib/postgresql/15/bin:/usr/bin:/bin", func(t *testing.T, u osUser, port int, tlsDir string) []string {
		return pgInstanceArgs(t, u, "db-0", port, tlsDir)
	}, pgLogin, false},
	{"mariadb", "mysql", "/usr/sbin:/usr/bin:/bin", mariadbInstanceArgs, mariadbLogin, true},
}

// TestClientAuthorityMountedLater starts each engine with the certificate
// required but no client authority mounted (its Secret did not have one
// yet): the application user is refused whatever it presents; once the
// authority is mounted, the instance program stops the engine, saying
// why, and the next start lets the user in with its certificate.
func TestClientAuthorityMountedLater(t *testing.T) {
	for _, engine := range clientCertificateEngines {
		t.Run(engine.name, func(t *testing.T) {
			u := lookup(t, engine.osUser)
			port := freePort(t)
			certs := newCertificates(t, u)
			logins := clientLogins(t, certs)
			authority, err := os.ReadFile(filepath.Join(certs.dir, layout.KeyClientCACert))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(certs.dir, layout.KeyClientCACert)); err != nil {
				t.Fatal(err)
			}
			args := append(engine.args(t, u, port, certs.dir), "--require-client-certificate")
			login := func(l clientLogin) error { return engine.login(port, l.password, l.tlsFor(t, certs)) }
			p := start(t, u, engine.path, args...)
			for _, l := range logins {
				if err := login(l); err == nil {
					t.Errorf("without the client authority, %s was let in", l.name)
				}
			}
			certs.writeFile(t, layout.KeyClientCACert, authority)
			if err := p.waitExit(t, time.Minute); err == nil || !strings.Contains(p.printed(), "the client certificate authority is mounted now") {
				t.Fatalf("the program did not stop the engine for the client authority (%v):\n%s", err, p.printed())
			}
			p = start(t, u, engine.path, args...)
			defer p.stop(t)
			expectLogins(t, logins, true, engine.verifiesAlways, login)
		})
	}
}

// TestReplacedClientAuthorityReported replaces the mounted client
// authority, as the operator stages a replaced one: first the former and
// the new one, then the new one alone. Once the instance program reports
// the digest of the file (the operator issues the certificate from the
// new authority then, and retires the former), the engine verifies with
// it: a certificate of the new authority gets in at once, and once the
// new one alone is reported, the former's is refused at once. No restart.
func TestReplacedClientAuthorityReported(t *testing.T) {
	for _, engine := range clientCertificateEngines {
		t.Run(engine.name, func(t *testing.T) {
			u := lookup(t, engine.osUser)
			port := freePort(t)
			certs := newCertificates(t, u)
			former := clientLogins(t, certs)[0]
			mounted, err := os.ReadFile(filepath.Join(certs.dir, layout.KeyClientCACert))
			if err != nil {
				t.Fatal(err)
			}
			p := start(t, u, engine.path, append(engine.args(t, u, port, certs.dir), "--require-client-certificate")...)
			defer p.stop(t)
			login := func(l clientLogin) error { return engine.login(port, l.password, l.tlsFor(t, certs)) }
			expectClientAuthoritiesReported(t, p, mounted)
			if err := login(former); err != nil {
				t.Fatalf("%s was refused: %v", former.name, err)
			}

			replacement := mustAuthority(t)
			next := former
			next.name, next.certificate = "its password and the new authority's certificate", issueClient(t, replacement, "shop")
			both := pki.JoinBundles(mounted, replacement.CertPEM)
			certs.writeFile(t, layout.KeyClientCACert, both)
			expectClientAuthoritiesReported(t, p, both)
			for _, l := range []clientLogin{next, former} {
				if err := login(l); err != nil {
					t.Errorf("trusting both authorities (reported), %s was refused: %v", l.name, err)
				}
			}

			certs.writeFile(t, layout.KeyClientCACert, replacement.CertPEM)
			expectClientAuthoritiesReported(t, p, replacement.CertPEM)
			if err := login(former); err == nil {
				t.Errorf("the former authority retired (reported), %s was let in", former.name)
			}
			if err := login(next); err != nil {
				t.Errorf("the former authority retired (reported), %s was refused: %v", next.name, err)
			}
			if strings.Count(p.printed(), "engine started") > 1 {
				t.Errorf("the engine started again:\n%s", p.printed())
			}
		})
	}
}

// expectClientAuthoritiesReported waits for the program to report the
// digest of authorities as the client authorities its engine verifies
// with.
func expectClientAuthoritiesReported(t *testing.T, p *program, authorities []byte) {
	t.Helper()
	want := layout.FileDigest(authorities)
	eventually(t, 30*time.Second, "the client authorities reported", func() error {
		got, err := certificateReport(p)
		if err != nil {
			return err
		}
		if got.ClientAuthorities != want {
			return fmt.Errorf("reported client authorities %q, want %q", got.ClientAuthorities, want)
		}
		return nil
	})
}

// pgLogin opens a session as the application user with password, over
// TLS with config (without TLS when nil), and runs a query.
func pgLogin(port int, password string, config *tls.Config) error {
	ctx := context.Background()
	sslmode := "disable"
	if config != nil {
		sslmode = "verify-full"
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d user=shop dbname=shop sslmode=%s connect_timeout=5", port, sslmode))
	if err != nil {
		return err
	}
	cfg.Password, cfg.TLSConfig, cfg.Fallbacks = password, config, nil
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// mariadbLogin is pgLogin for MariaDB.
func mariadbLogin(port int, password string, config *tls.Config) error {
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "shop", password, "shop"
	cfg.Timeout, cfg.TLS = 5*time.Second, config
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var one int
	return db.QueryRowContext(context.Background(), "SELECT 1").Scan(&one)
}

// TestMariaDBPromotionRequiresTheCertificate switches a MariaDB primary
// that does not require the application user's certificate over to a
// replica that does, as a rollout that turns it on does: the replica took
// its users from the primary, so the password alone works there until its
// promotion, after which only the password with the certificate does.
func TestMariaDBPromotionRequiresTheCertificate(t *testing.T) {
	my := lookup(t, "mysql")
	path := "/usr/sbin:/usr/bin:/bin"
	certs := newCertificates(t, my)
	logins := clientLogins(t, certs)
	ports, args, designations := mariadbPair(t, my, "--tls-dir="+certs.dir)
	db0 := start(t, my, path, args["db-0"]...)
	db1 := start(t, my, path, append(args["db-1"], "--require-client-certificate",
		"--clone-port="+strconv.Itoa(ports["db-0"]), "--clone-instance-port="+db0.instancePort())...)
	defer db1.stop(t)
	login := func(l clientLogin) error { return mariadbLogin(ports["db-1"], l.password, l.tlsFor(t, certs)) }
	expectLogins(t, logins, false, true, login)

	designate(t, my, designations["db-0"], "db-1", 2)
	designate(t, my, designations["db-1"], "db-1", 2)
	if code, answer := db0.post(t, layout.DemotePath, "repl-pass", layout.DemoteRequest{Epoch: 2}); code != http.StatusOK {
		t.Fatalf("demoting db-0: %d %s", code, answer)
	}
	if err := db0.waitExit(t, time.Minute); err == nil {
		t.Error("the demoted primary's program did not exit")
	}
	if code, answer := db1.post(t, layout.PromotePath, "repl-pass", layout.PromoteRequest{Epoch: 2}); code != http.StatusOK {
		t.Fatalf("promoting db-1: %d %s", code, answer)
	}
	expectLogins(t, logins, true, true, login)
}
