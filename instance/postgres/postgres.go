// Package postgres drives PostgreSQL for the instance program: initdb, the
// server process, and the users kept equal to the credentials Secret.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Superuser is the superuser dbpilot keeps for itself.
const Superuser = "postgres"

// Engine is one PostgreSQL instance.
type Engine struct {
	// DataDir is PGDATA.
	DataDir string
	// ConfigFile is the postgresql.conf the server runs with; empty runs
	// with the one in DataDir.
	ConfigFile string
	// SocketDir is where the server's Unix socket is (its
	// unix_socket_directories); the program connects there as the
	// superuser with peer authentication, so it needs no password.
	SocketDir string
	// Port is the server's port, which names its socket file.
	Port int
	// ExtraArgs are more server arguments (tests use them).
	ExtraArgs []string
	// Replication says whether a new instance clones a primary, and how
	// replicas reach this one.
	Replication Replication
	// Archive makes the server archive its WAL with the program's wal-push
	// (the Database has a backup destination).
	Archive bool
	// ArchiveTimeout is the longest a commit waits before its WAL segment
	// is switched and archived; DefaultArchiveTimeout when zero.
	ArchiveTimeout time.Duration
	// Restore, for a Database bootstrapped from a backup, is the backup a
	// new primary restores instead of running initdb.
	Restore *layout.RestoreSource
	// TLS is the server certificate the server serves, when mounted.
	TLS instance.TLS
	// RequireTLS refuses network connections without TLS, when the
	// certificate is mounted (hostssl rules in pg_hba.conf; the local
	// socket stays open to the program).
	RequireTLS bool
	// RequireClientCertificate has the application user log in over the
	// network only with a client certificate of its name, verified with
	// the mounted client authority, besides its password (pg_hba.conf's
	// clientcert=verify-full); without that authority mounted, its
	// network logins are refused.
	RequireClientCertificate bool

	// followedConfig is the configuration file's content last reloaded;
	// only the supervisor's loop uses it.
	followedConfig instance.FollowedFile
	// parameters is what the program made of spec.parameters.
	parameters instance.ParametersState
	// clientsVerified is verifiesClients' answer, once given.
	clientsVerified *bool
}

// DefaultArchiveTimeout is the longest a commit waits, by default, before
// its WAL segment is switched and archived.
const DefaultArchiveTimeout = 60 * time.Second

var _ instance.Engine = (*Engine)(nil)

// Initialized reports whether PGDATA holds a cluster.
func (e *Engine) Initialized() (bool, error) {
	if backup.Restoring(e.DataDir) {
		return false, nil
	}
	_, err := os.Stat(filepath.Join(e.DataDir, "PG_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Bootstrap runs initdb. The superuser gets its password at once; local
// connections use peer authentication (the program runs as the server's OS
// user), network connections SCRAM from any address.
func (e *Engine) Bootstrap(ctx context.Context, creds instance.Credentials) error {
	var err error
	switch {
	case e.Replication.CloneFrom != "":
		err = e.clone(ctx)
	case e.Restore != nil:
		err = e.restore(ctx)
	default:
		err = e.initdb(ctx, creds)
	}
	if err != nil {
		return err
	}
	return e.writeHBA(creds.Username)
}

// initdb creates a new cluster with the superuser's password.
func (e *Engine) initdb(ctx context.Context, creds instance.Credentials) error {
	pwfile, err := os.CreateTemp("", "pwfile-")
	if err != nil {
		return err
	}
	defer os.Remove(pwfile.Name())
	if _, err := pwfile.WriteString(creds.SuperuserPassword + "\n"); err != nil {
		pwfile.Close()
		return err
	}
	pwfile.Close()
	cmd := exec.CommandContext(ctx, "initdb", InitdbArgs(e.DataDir, pwfile.Name())...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	return nil
}

// InitdbArgs are initdb's arguments for a new cluster.
func InitdbArgs(dataDir, pwfile string) []string {
	return []string{
		"--pgdata=" + dataDir,
		"--username=" + Superuser,
		"--pwfile=" + pwfile,
		"--auth-local=peer",
		"--auth-host=scram-sha-256",
		"--encoding=UTF8",
		"--locale=C",
		"--data-checksums",
	}
}

// HBARules are what pg_hba.conf lets in over the network.
type HBARules struct {
	// RequireTLS lets connections in only over TLS (hostssl).
	RequireTLS bool
	// CertificateUser, when set, logs in only over TLS with a client
	// certificate of its name besides its password (clientcert=verify-full).
	CertificateUser string
	// VerifiesClients says the server has an authority to verify client
	// certificates with (ssl_ca_file): without, CertificateUser is
	// refused on the network, and the rules still load.
	VerifiesClients bool
}

// HBA is pg_hba.conf: the program's own sessions over the socket by peer
// authentication; every user in with SCRAM from any address (the Services
// are the boundary, and passwords are never sent in clear), the
// replication user for replication; with RequireTLS only over TLS
// (hostssl), so a connection without finds no rule and is refused. A
// CertificateUser's rules come first: the first rule that matches a
// connection decides it. A user name pg_hba.conf cannot quote (a double
// quote, a line break) refuses every user but replication on the
// network instead, the operator saying why.
func HBA(rules HBARules) string {
	kind := "host"
	if rules.RequireTLS {
		kind = "hostssl"
	}
	addresses := []string{"0.0.0.0/0", "::/0"}
	hba := "# Written by dbpilot's instance program at every start; changes are overwritten.\n" +
		"local all all peer\n" +
		"local replication all peer\n"
	if user := rules.CertificateUser; user != "" {
		who := `"` + user + `"`
		if strings.ContainsAny(user, "\"\r\n") {
			who = "all"
		}
		for _, address := range addresses {
			if rules.VerifiesClients && who != "all" {
				hba += "hostssl all " + who + " " + address + " scram-sha-256 clientcert=verify-full\n"
			}
			hba += "host all " + who + " " + address + " reject\n"
		}
	}
	for _, database := range []string{"all all", "replication " + ReplicationUser} {
		for _, address := range addresses {
			hba += kind + " " + database + " " + address + " scram-sha-256\n"
		}
	}
	return hba
}

// writeHBA writes the data directory's pg_hba.conf (HBA), so a change of
// spec.tls.required or clientCertificateRequired applies at the next
// start. TLS is required only with the certificate mounted: without it,
// no client could connect. Without data there is nothing to write.
func (e *Engine) writeHBA(user string) error {
	path := filepath.Join(e.DataDir, "pg_hba.conf")
	content, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	rules := HBARules{RequireTLS: e.RequireTLS && e.TLS.Enabled(), VerifiesClients: e.verifiesClients()}
	if e.RequireClientCertificate {
		rules.CertificateUser = user
	}
	wanted := HBA(rules)
	if string(content) == wanted {
		return nil
	}
	tmp := path + ".dbpilot"
	if err := os.WriteFile(tmp, []byte(wanted), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ServerCommand is postgres with the generated configuration.
func (e *Engine) ServerCommand() *exec.Cmd {
	args := []string{"-D", e.DataDir}
	if e.ConfigFile != "" {
		args = append(args, "-c", "config_file="+e.ConfigFile)
	}
	args = append(args, walBoundArgs(e.DataDir)...)
	if e.Archive {
		timeout := e.ArchiveTimeout
		if timeout <= 0 {
			timeout = DefaultArchiveTimeout
		}
		args = append(args, ArchiveArgs(programPath(), timeout)...)
	}
	if e.Restore != nil && e.recovering() {
		args = append(args, RestoreArgs(programPath(), e.Restore.TargetTime)...)
	}
	args = append(args, TLSArgs(e.TLS, e.verifiesClients())...)
	args = append(args, e.standbyFloorArgs()...)
	args = append(args, e.ExtraArgs...)
	return exec.Command("postgres", args...)
}

// TLSArgs turn TLS on with the mounted server certificate, when there is
// one: on the command line rather than in the generated configuration, so
// a pod without the certificate (made before dbpilot issued one) starts
// as it did. The server reads the files again at each reload.
//
// With verifyClients the server also verifies client certificates with
// the mounted client authority (ssl_ca_file): only then, since a server
// given an authority asks every client for a certificate, and refuses one
// it did not sign (say, libpq's ~/.postgresql/postgresql.crt of another
// authority).
func TLSArgs(tls instance.TLS, verifyClients bool) []string {
	if !tls.Enabled() {
		return nil
	}
	args := []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + tls.CertFile(), "-c", "ssl_key_file=" + tls.KeyFile(),
		"-c", "ssl_min_protocol_version=TLSv1.2"}
	if verifyClients {
		args = append(args, "-c", "ssl_ca_file="+tls.ClientCAFile())
	}
	return args
}

// verifiesClients says, once for the program's run (one start of the
// server), whether the server verifies client certificates: the
// application user's is required, and the client authority is mounted (a
// server given a file it cannot read does not start). pg_hba.conf and the
// server's arguments agree on it, whenever the kubelet adds the file.
func (e *Engine) verifiesClients() bool {
	if e.clientsVerified == nil {
		verifies := e.RequireClientCertificate && e.TLS.VerifiesClients()
		e.clientsVerified = &verifies
	}
	return *e.clientsVerified
}

var _ instance.ClientVerifier = (*Engine)(nil)

// VerifiesClients reports whether the server verifies client
// certificates (verifiesClients), and whether it should.
func (e *Engine) VerifiesClients() (verifies, needs bool) {
	return e.verifiesClients(), e.RequireClientCertificate
}

var _ instance.TLSReloader = (*Engine)(nil)

// TLSFiles are the mounted server certificate.
func (e *Engine) TLSFiles() instance.TLS { return e.TLS }

// ReloadTLS has the server reload, which reads its certificate again.
func (e *Engine) ReloadTLS(ctx context.Context) error {
	if err := e.reload(ctx); err != nil {
		return fmt.Errorf("reloading the server certificate: %w", err)
	}
	return nil
}

// StopSignal is SIGINT: a fast shutdown, which disconnects clients and
// writes a checkpoint.
func (e *Engine) StopSignal() os.Signal { return syscall.SIGINT }

// ownSessionSettings keep the program's sessions as dbpilot needs them
// whatever spec.parameters set for everyone: writable, never timed out,
// and never logging a statement (they carry the users' password
// verifiers).
var ownSessionSettings = map[string]string{
	"default_transaction_read_only":       "off",
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"log_statement":                       "none",
	"log_min_duration_statement":          "-1",
	"log_min_error_statement":             "panic",
	"log_duration":                        "off",
}

// connect opens a session as the superuser over the Unix socket.
func (e *Engine) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host = e.SocketDir
	cfg.Port = uint16(e.port())
	cfg.User = Superuser
	cfg.Database = "postgres"
	// The program's own writes (users, slots) do not wait for synchronous
	// replicas: a new primary has none yet.
	cfg.RuntimeParams["synchronous_commit"] = "local"
	for name, value := range ownSessionSettings {
		cfg.RuntimeParams[name] = value
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func (e *Engine) port() int {
	if e.Port == 0 {
		return 5432
	}
	return e.Port
}

// Ping opens a superuser session over the socket: a primary is ready when
// it answers, a replica when it also streams from the primary.
func (e *Engine) Ping(ctx context.Context) error {
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	recovering, err := inRecovery(ctx, conn)
	if err != nil || !recovering {
		return err
	}
	return streaming(ctx, conn)
}

// EnsureUsers sets the superuser's password, makes the application user
// (login, no other privilege) own a database of its name, and keeps the
// replication and monitoring users' passwords.
func (e *Engine) EnsureUsers(ctx context.Context, creds instance.Credentials) error {
	if err := instance.RefuseReservedUser("postgres", creds.Username); err != nil {
		return err
	}
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if recovering, err := inRecovery(ctx, conn); err != nil || recovering {
		// A replica is read-only: it receives the users from the primary.
		return err
	}
	statements, err := userStatements(ctx, conn, creds)
	if err != nil {
		return err
	}
	if e.Replication.Password != "" {
		verifier, err := scramVerifier(e.Replication.Password)
		if err != nil {
			return err
		}
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", ReplicationUser).Scan(&exists); err != nil {
			return err
		}
		statements = append(statements, ReplicationStatements(verifier, exists)...)
	}
	if creds.MonitoringPassword != "" {
		verifier, err := scramVerifier(creds.MonitoringPassword)
		if err != nil {
			return err
		}
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", MonitoringUser).Scan(&exists); err != nil {
			return err
		}
		statements = append(statements, MonitoringStatements(verifier, exists)...)
	}
	for _, stmt := range statements {
		if _, err := conn.Exec(ctx, stmt.SQL); err != nil {
			// The statement carries a verifier, never a password, but it
			// is still not repeated: its description says what failed.
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	return nil
}

// Statement is one SQL statement and what it does, for error messages that
// never repeat the statement (it may carry a password verifier).
type Statement struct{ What, SQL string }

func userStatements(ctx context.Context, conn *pgx.Conn, creds instance.Credentials) ([]Statement, error) {
	superVerifier, err := scramVerifier(creds.SuperuserPassword)
	if err != nil {
		return nil, err
	}
	appVerifier, err := scramVerifier(creds.Password)
	if err != nil {
		return nil, err
	}
	var roleExists, dbExists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", creds.Username).Scan(&roleExists); err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", creds.Username).Scan(&dbExists); err != nil {
		return nil, err
	}
	stmts := UserStatements(creds.Username, superVerifier, appVerifier, roleExists, dbExists)
	if !roleExists {
		return stmts, nil
	}
	rows, err := conn.Query(ctx, `SELECT r.rolname FROM pg_auth_members m
JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member
WHERE u.rolname = $1 AND r.rolname IN ('pg_read_all_data', 'pg_write_all_data')`, creds.Username)
	if err != nil {
		return nil, err
	}
	memberOf, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	return append(stmts, ApplicationUserCleanup(creds.Username, memberOf)...), nil
}

// ApplicationUserCleanup takes back from an existing application user
// what a user of spec.users of its name was given before (a user removed
// from spec.users may be the application user's name since): sessions
// read-only by default, and the memberships of memberOf. It keeps the
// application user owning its database and nothing more.
func ApplicationUserCleanup(username string, memberOf []string) []Statement {
	user := pgx.Identifier{username}.Sanitize()
	stmts := []Statement{{"making the application user's sessions writable", "ALTER ROLE " + user + " RESET default_transaction_read_only"}}
	for _, role := range memberOf {
		stmts = append(stmts, Statement{"taking " + role + " back from the application user", "REVOKE " + pgx.Identifier{role}.Sanitize() + " FROM " + user})
	}
	return stmts
}

// UserStatements are the statements that bring the users to the wanted
// state, given which already exist. The application user can log in and
// owns its database, and nothing more: it is not a superuser and cannot
// create roles or databases.
func UserStatements(username, superVerifier, appVerifier string, roleExists, dbExists bool) []Statement {
	user := pgx.Identifier{username}.Sanitize()
	attributes := "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD " + literal(appVerifier)
	stmts := []Statement{{"setting the superuser's password", "ALTER ROLE " + Superuser + " WITH PASSWORD " + literal(superVerifier)}}
	if roleExists {
		stmts = append(stmts, Statement{"updating the application user", "ALTER ROLE " + user + " WITH " + attributes})
	} else {
		stmts = append(stmts, Statement{"creating the application user", "CREATE ROLE " + user + " WITH " + attributes})
	}
	if !dbExists {
		stmts = append(stmts, Statement{"creating the application database", "CREATE DATABASE " + user + " OWNER " + user})
	}
	stmts = append(stmts,
		Statement{"revoking public access to the application database", "REVOKE ALL ON DATABASE " + user + " FROM PUBLIC"},
		// Every role may connect to the system databases by default; the
		// application user has no business there.
		Statement{"revoking public access to the postgres database", "REVOKE CONNECT ON DATABASE postgres FROM PUBLIC"},
		Statement{"revoking public access to the template1 database", "REVOKE CONNECT ON DATABASE template1 FROM PUBLIC"},
	)
	return stmts
}

// literal quotes a string as an SQL literal (standard_conforming_strings is
// on by default since PostgreSQL 9.1).
func literal(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
