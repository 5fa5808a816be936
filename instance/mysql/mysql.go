// Package mysql drives MariaDB and MySQL for the instance program: the first
// start of an empty data directory, the server process, and the users kept
// equal to the credentials Secret. MariaDB runs for real in the tests;
// MySQL's commands are unit-tested only (there is no MySQL server package
// to run them against here).
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Flavor is MariaDB or MySQL.
type Flavor string

// The flavors.
const (
	MariaDB Flavor = "mariadb"
	MySQL   Flavor = "mysql"
)

// Engine is one MariaDB or MySQL server.
type Engine struct {
	Flavor Flavor
	// DataDir is the server's datadir.
	DataDir string
	// Socket is the server's Unix socket.
	Socket string
	// DefaultsFile, when set, replaces the configuration files the server
	// would read (tests use it); in a pod the image's my.cnf includes the
	// generated conf.d file.
	DefaultsFile string
	// ExtraArgs are more server arguments.
	ExtraArgs []string
	// ConfigFile is the generated configuration file the server reads; a
	// running MariaDB follows its changes (FollowConfig).
	ConfigFile string

	// Replication says whether a new MariaDB instance clones a primary, and
	// how replicas reach this one.
	Replication Replication
	// ArchiveTimeout is the longest a MariaDB primary's binary log waits
	// to be rotated and archived; DefaultArchiveTimeout when zero.
	ArchiveTimeout time.Duration
	// Restore, for a MariaDB Database bootstrapped from a backup, is the
	// backup a new primary restores instead of creating empty tables.
	Restore *layout.RestoreSource
	// TLS is the server certificate the server serves, when mounted.
	TLS instance.TLS
	// RequireTLS refuses network connections without TLS, when the
	// certificate is mounted (the socket stays open to the program).
	RequireTLS bool
	// RequireClientCertificate has the application user log in only with
	// a client certificate of its name (REQUIRE SUBJECT), verified with
	// the mounted client authority, besides its password.
	RequireClientCertificate bool

	// appliedSuperuser is the superuser password last applied: MySQL's root
	// logs in with it until a rotated one is applied.
	// The probes read it while the supervisor writes it.
	appliedSuperuser atomic.Pointer[string]
	// promoting is set while a promotion stops replication on purpose.
	promoting atomic.Bool
	// startedVerifyingClients says the server was started verifying
	// client certificates with the client authority (TLSArgs).
	startedVerifyingClients bool
	// applicationUser is the application user's name, from the
	// credentials EnsureUsers was last given: a promotion applies its
	// REQUIRE clause (a replica takes its users from its primary).
	applicationUser atomic.Pointer[string]
	// releasingCommits is set while a backup for a replica has the primary
	// acknowledge commits without a replica (see commitrelease.go).
	releasingCommits atomic.Bool
	// followedConfig is the configuration file's content last applied;
	// only the supervisor's loop uses it.
	followedConfig instance.FollowedFile
	// parameters is what the program made of spec.parameters.
	parameters instance.ParametersState
	// binlogs is what the primary's binary log archiving has done.
	binlogs binlogArchive
}

var _ instance.Engine = (*Engine)(nil)

// Initialized reports whether the datadir holds the system tables.
func (e *Engine) Initialized() (bool, error) {
	if backup.Restoring(e.DataDir) {
		return false, nil
	}
	_, err := os.Stat(filepath.Join(e.DataDir, "mysql"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (e *Engine) defaultsArgs() []string {
	if e.DefaultsFile == "" {
		return nil
	}
	// --defaults-file must come first.
	return []string{"--defaults-file=" + e.DefaultsFile}
}

// BootstrapCommand creates the system tables. MariaDB's root and the OS user
// running the program authenticate over the Unix socket by who they are
// (unix_socket), so the program never needs a password to manage users and
// a rotated Secret can always be applied; MySQL's root starts without a
// password and gets the superuser password on the first start.
func (e *Engine) BootstrapCommand(osUser string) (string, []string) {
	args := e.defaultsArgs()
	if e.Flavor == MySQL {
		return "mysqld", append(args, "--initialize-insecure", "--datadir="+e.DataDir)
	}
	return "mariadb-install-db", append(args,
		"--datadir="+e.DataDir,
		"--auth-root-authentication-method=socket",
		"--auth-root-socket-user="+osUser,
		"--skip-test-db",
		"--skip-name-resolve",
	)
}

// Bootstrap creates the system tables in an empty datadir, or, for a
// MariaDB replica, clones the primary, or restores a backup.
func (e *Engine) Bootstrap(ctx context.Context, _ instance.Credentials) error {
	if e.Flavor == MariaDB && e.Replication.CloneFrom != "" {
		return e.clone(ctx)
	}
	if e.Restore != nil {
		return e.restore(ctx)
	}
	osUser, err := currentUser()
	if err != nil {
		return err
	}
	name, args := e.BootstrapCommand(osUser)
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return nil
}

// ServerCommand is the server with its datadir and socket.
func (e *Engine) ServerCommand() *exec.Cmd {
	name := "mariadbd"
	if e.Flavor == MySQL {
		name = "mysqld"
	}
	// spec.parameters over the configuration files, dbpilot's own options
	// over them.
	args := append(append(e.defaultsArgs(), e.acceptedArgs()...), "--datadir="+e.DataDir)
	if e.Socket != "" {
		args = append(args, "--socket="+e.Socket)
	}
	if e.Replication.ServerID > 0 {
		args = append(args, "--server-id="+strconv.Itoa(e.Replication.ServerID))
	}
	if e.hasReplicaData() {
		args = append(args, "--read-only=ON")
	}
	if e.TLS.Enabled() {
		e.startedVerifyingClients = e.TLS.VerifiesClients()
		args = append(args, TLSArgs(e.TLS, e.startedVerifyingClients, e.noAuthoritiesDir())...)
	}
	if e.RequireTLS && e.TLS.Enabled() {
		args = append(args, "--require-secure-transport=ON")
	}
	return exec.Command(name, append(args, e.ExtraArgs...)...)
}

// TLSArgs serve TLS with the mounted server certificate, when there is
// one: on the command line rather than in the generated configuration, so
// a pod without the certificate (made before dbpilot issued one) starts
// as it did.
//
// The server verifies client certificates with its ssl-ca, the client
// authority, when verifyClients says it is mounted; without (a Secret
// from before client certificates) with none: ssl-capath is a directory
// that holds none (without it, the server would take the system's trust
// store), so a certificate REQUIRE SUBJECT asks for never verifies.
func TLSArgs(tls instance.TLS, verifyClients bool, noAuthorities string) []string {
	if !tls.Enabled() {
		return nil
	}
	args := []string{"--ssl-cert=" + tls.CertFile(), "--ssl-key=" + tls.KeyFile(), "--tls-version=TLSv1.2,TLSv1.3"}
	if verifyClients {
		return append(args, "--ssl-ca="+tls.ClientCAFile())
	}
	return append(args, "--ssl-capath="+noAuthorities)
}

// noAuthoritiesDir is an empty directory beside the socket (the pod's run
// directory), made when missing: an ssl-capath that trusts no one.
func (e *Engine) noAuthoritiesDir() string {
	dir := filepath.Join(filepath.Dir(e.Socket), "no-client-authorities")
	// One that cannot be made stops the server as it starts, naming it.
	_ = os.MkdirAll(dir, 0o700)
	return dir
}

var (
	_ instance.TLSReloader    = (*Engine)(nil)
	_ instance.ClientVerifier = (*Engine)(nil)
)

// VerifiesClients reports whether the server verifies client
// certificates with the client authority, which it took as it started,
// and whether it needs to.
func (e *Engine) VerifiesClients() (verifies, needs bool) {
	return e.startedVerifyingClients, e.RequireClientCertificate
}

// TLSFiles are the mounted server certificate.
func (e *Engine) TLSFiles() instance.TLS { return e.TLS }

// ReloadTLS has the server read its certificate files again.
func (e *Engine) ReloadTLS(ctx context.Context) error {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, reloadTLSStatement(e.Flavor)); err != nil {
		return fmt.Errorf("reloading the server certificate: %w", err)
	}
	return nil
}

func reloadTLSStatement(flavor Flavor) string {
	if flavor == MySQL {
		return "ALTER INSTANCE RELOAD TLS"
	}
	return "FLUSH SSL"
}

// StopSignal is SIGTERM, the server's clean shutdown.
func (e *Engine) StopSignal() os.Signal { return syscall.SIGTERM }

// connect opens a pool of one over the socket: MariaDB as the OS user
// (unix_socket), MySQL as root with the superuser password, or none before
// the first start has set it.
func (e *Engine) connect(ctx context.Context, creds instance.Credentials) (*sql.DB, error) {
	cfg := driver.NewConfig()
	cfg.Net = "unix"
	cfg.Addr = e.Socket
	if e.Flavor == MySQL {
		cfg.User = "root"
		var err error
		applied := ""
		if p := e.appliedSuperuser.Load(); p != nil {
			applied = *p
		}
		for _, password := range []string{creds.SuperuserPassword, applied, ""} {
			cfg.Passwd = password
			var db *sql.DB
			if db, err = open(ctx, cfg); err == nil {
				return db, nil
			}
		}
		return nil, err
	}
	osUser, err := currentUser()
	if err != nil {
		return nil, err
	}
	cfg.User = osUser
	cfg.Params = ownSessionSettings
	return open(ctx, cfg)
}

// ownSessionSettings keep the program's MariaDB sessions as dbpilot needs
// them whatever spec.parameters set for everyone: committing each
// statement, never timed out, in the server's default SQL mode, and out
// of the general and slow query logs (its statements carry passwords).
var ownSessionSettings = map[string]string{
	"autocommit":         "1",
	"max_statement_time": "0",
	"sql_mode":           "'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION'",
	"sql_log_off":        "1",
	"slow_query_log":     "0",
}

func open(ctx context.Context, cfg *driver.Config) (*sql.DB, error) {
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Ping opens a session over the socket: a primary is ready when it
// answers, a replica when both its replication threads run.
func (e *Engine) Ping(ctx context.Context) error {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil && e.Flavor == MySQL {
		// MySQL's root needs its password, which Ping has only once the
		// credentials were applied: before, a refused login still proves
		// the server accepts connections (and readiness also waits for
		// the credentials).
		var mysqlErr *driver.MySQLError
		if errors.As(err, &mysqlErr) {
			return nil
		}
	}
	if err != nil {
		return err
	}
	defer db.Close()
	replica, running, lastError, err := replicaState(ctx, db)
	switch {
	case err != nil:
		return err
	case replica && !running:
		return fmt.Errorf("the replica does not replicate from its primary: %s", lastError)
	}
	return nil
}

// EnsureUsers applies the credentials.
func (e *Engine) EnsureUsers(ctx context.Context, creds instance.Credentials) error {
	if err := instance.RefuseReservedUser(string(e.Flavor), creds.Username); err != nil {
		return err
	}
	db, err := e.connect(ctx, creds)
	if err != nil {
		return err
	}
	defer db.Close()
	e.applicationUser.Store(&creds.Username)
	statements := UserStatements(e.Flavor, creds, e.RequireClientCertificate)
	if e.Flavor == MySQL && e.Replication.CloneFrom != "" {
		// A replica receives the users from its primary: it clones it,
		// then replicates from it. Once cloned, its root has the
		// primary's password, the Secret's.
		if err := e.ensureMySQLReplica(ctx, db); err != nil {
			return err
		}
		e.appliedSuperuser.Store(&creds.SuperuserPassword)
		return nil
	}
	if e.Flavor == MySQL && e.Replication.Password != "" {
		statements = append(statements, MySQLReplicationUserStatements(e.Replication.Password)...)
	}
	if err := e.replayBinlogs(ctx, db, creds); err != nil {
		return err
	}
	if e.Flavor == MariaDB {
		if err := e.startReplica(ctx, db); err != nil {
			return err
		}
		if err := e.startRejoin(ctx, db); err != nil {
			return err
		}
		replica, _, _, err := replicaState(ctx, db)
		if err != nil {
			return err
		}
		if replica {
			// A replica receives the users from its primary and takes
			// no writes of its own.
			_, err := db.ExecContext(ctx, "SET GLOBAL read_only = ON")
			return err
		}
		if e.Replication.Password != "" {
			statements = append(statements, ReplicationUserStatements(e.Replication.Password)...)
		}
	}
	if creds.MonitoringPassword != "" {
		statements = append(statements, MonitoringStatements(e.Flavor, creds.MonitoringPassword)...)
	}
	if e.Replication.SemiSync && !e.releasingCommits.Load() {
		// Last: the statements before must not wait for a replica a
		// new primary does not have yet.
		statements = append(statements, semiSyncStatement(e.Flavor))
	}
	for _, stmt := range statements {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	e.appliedSuperuser.Store(&creds.SuperuserPassword)
	return nil
}

// Statement is one SQL statement and what it does, for error messages that
// never repeat the statement (it may carry a password or its hash).
type Statement struct{ What, SQL string }

// UserStatements bring the users to the wanted state: root with the
// superuser password (besides socket authentication on MariaDB), and the
// application user with every privilege on its own database (and the
// grant option, to grant them on) and none elsewhere; with
// requireCertificate it must also present its client certificate
// (ApplicationRequireStatement).
func UserStatements(flavor Flavor, creds instance.Credentials, requireCertificate bool) []Statement {
	app := quoteString(creds.Username) + "@'%'"
	database := quoteIdentifier(creds.Username)
	var superuser, appAuth string
	if flavor == MySQL {
		superuser = "ALTER USER 'root'@'localhost' IDENTIFIED BY " + quoteString(creds.SuperuserPassword)
		appAuth = "IDENTIFIED BY " + quoteString(creds.Password)
	} else {
		superuser = "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING " +
			quoteString(nativePasswordHash(creds.SuperuserPassword))
		appAuth = "IDENTIFIED BY PASSWORD " + quoteString(nativePasswordHash(creds.Password))
	}
	return []Statement{
		{"setting the superuser's password", superuser},
		{"creating the application user", "CREATE USER IF NOT EXISTS " + app + " " + appAuth},
		// Unlocked: a user of spec.users removed (locked) may be the
		// application user's name since.
		{"setting the application user's password", "ALTER USER " + app + " " + appAuth + " ACCOUNT UNLOCK"},
		ApplicationRequireStatement(creds.Username, requireCertificate),
		{"creating the application database", "CREATE DATABASE IF NOT EXISTS " + database},
		// With the grant option, as an owner in PostgreSQL, so that it
		// can grant a user of spec.users (access Connect) its tables.
		{"granting the application database", "GRANT ALL PRIVILEGES ON " + database + ".* TO " + app + " WITH GRANT OPTION"},
	}
}

// ApplicationRequireStatement has the application user present a client
// certificate whose subject is its name alone, which the server verifies
// with its authority (REQUIRE SUBJECT), when requireCertificate says so;
// else nothing (REQUIRE NONE: TLS itself is required, or not, for every
// user by require_secure_transport).
func ApplicationRequireStatement(username string, requireCertificate bool) Statement {
	require := "REQUIRE NONE"
	if requireCertificate {
		require = "REQUIRE SUBJECT " + quoteString("/CN="+username)
	}
	// IF EXISTS: a promoted replica may not have the user yet (its
	// former primary never created it), and a failure would leave the
	// promotion half done.
	return Statement{"requiring the application user's client certificate, or not", "ALTER USER IF EXISTS " + quoteString(username) + "@'%' " + require}
}

func currentUser() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("looking up the OS user (the image's /etc/passwd must name uid %d): %w", os.Getuid(), err)
	}
	return u.Username, nil
}

// Actions are the MariaDB instance's authenticated endpoints: the backup a
// new replica clones.
func (e *Engine) Actions() map[string]http.Handler {
	if e.Flavor != MariaDB {
		return nil
	}
	return map[string]http.Handler{"GET " + BackupPath: e.BackupHandler()}
}
