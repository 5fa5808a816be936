// Command instance is dbpilot's instance program, the entrypoint of every
// database container: `instance copy DEST` (the init container copies it
// from the operator's image into a shared volume) and `instance run ...`
// (bootstrap, credentials and supervision of the engine; see package
// instance).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/instance/mysql"
	"github.com/dbpilot/dbpilot/instance/postgres"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s %s DEST | %s [flags]\n", os.Args[0], layout.CommandCopy, layout.CommandRun)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case layout.CommandCopy:
		err = copySelf(os.Args[2:])
	case layout.CommandRun:
		err = run(os.Args[2:], log)
	case layout.CommandWALPush:
		err = walPush(os.Args[2:])
	case layout.CommandWALFetch:
		os.Exit(walFetch(os.Args[2:], log))
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Error("instance program failed", "command", os.Args[1], "error", err.Error())
		writeTerminationMessage(err)
		os.Exit(1)
	}
}

// terminationLog is where the kubelet reads a container's termination
// message (the default terminationMessagePath).
const terminationLog = "/dev/termination-log"

// writeTerminationMessage leaves the error where the operator reads why the
// container stopped (a restore that cannot proceed, for one). Outside a
// pod the file does not exist, and nothing is written.
func writeTerminationMessage(err error) {
	f, openErr := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0)
	if openErr != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(err.Error())
}

// copySelf copies this program to DEST, executable.
func copySelf(args []string) error {
	if len(args) != 1 {
		return errors.New("copy takes one argument, the destination")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(args[0], os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func run(args []string, log *slog.Logger) error {
	flags := flag.NewFlagSet(layout.CommandRun, flag.ContinueOnError)
	engineName := flags.String("engine", "", "postgres, mariadb or mysql")
	dataDir := flags.String("data-dir", "", "the engine's data directory (PGDATA, datadir)")
	configFile := flags.String("config-file", "", "PostgreSQL: the postgresql.conf to run with; MariaDB/MySQL: the generated configuration the server reads, followed while it runs (default "+layout.MySQLConfigFile+")")
	socket := flags.String("socket", "", "PostgreSQL: the socket directory; MariaDB/MySQL: the socket file")
	port := flags.Int("port", 0, "PostgreSQL: the port (names the socket file)")
	defaultsFile := flags.String("defaults-file", "", "MariaDB/MySQL: a configuration file replacing the default ones")
	credentialsDir := flags.String("credentials-dir", layout.CredentialsDir, "the credentials Secret's files")
	probeAddress := flags.String("probe-address", ":"+strconv.Itoa(layout.ProbePort), "where the kubelet's probes (/healthz, /readyz) are answered")
	maxReplicaLag := flags.Duration("max-replica-lag", 30*time.Second, "a replica further behind its primary is not ready (leaves the -ro Service) until it catches up; 0: no bound")
	instanceName := flags.String("instance-name", "", "this instance's name (default: the host name, which is the pod name)")
	bootstrapAs := flags.String("bootstrap", "auto", "without --designation-dir, what this instance is: primary, replica, or auto (the instance of ordinal 0 a primary, the others replicas)")
	designationDir := flags.String("designation-dir", "", "the designation files (which instance is the primary, and the epoch): this instance is a replica unless they name it")
	cloneFrom := flags.String("clone-from", "", "PostgreSQL: the primary's host a replica clones and streams from")
	clonePort := flags.Int("clone-port", 0, "the primary's engine port (default the engine's)")
	cloneInstancePort := flags.Int("clone-instance-port", layout.ProbePort, "MariaDB: the port of the primary's instance program, which streams the backup a replica clones")
	replicationPasswordFile := flags.String("replication-password-file", "", "the replication user's password")
	semiSync := flags.Bool("semi-sync", false, "MariaDB/MySQL: a primary waits for a replica to acknowledge each commit (the server's configuration sets the rest)")
	archiveTimeout := flags.Duration("archive-timeout", postgres.DefaultArchiveTimeout, "with a backup destination, the longest a commit waits before the primary's WAL segment (binary log) holding it is switched and archived")
	metricsAddress := flags.String("metrics-address", "", "where the engine metrics are served over HTTPS (e.g. :"+strconv.Itoa(layout.MetricsPort)+"); \"\": not served")
	metricsTokenFile := flags.String("metrics-token-file", "", "the bearer token a metrics scraper must present (every scrape is refused without it)")
	monitoringPasswordFile := flags.String("monitoring-password-file", "", "the monitoring user's password (no monitoring user without it)")
	usersFile := flags.String("users-file", layout.UsersFile, "the users of spec.users the primary keeps (a JSON list; no users while it does not exist)")
	requireTLS := flags.Bool("require-tls", false, "refuse network connections without TLS (with the certificate of --tls-dir mounted)")
	requireClientCertificate := flags.Bool("require-client-certificate", false, "the application user logs in over the network only with a client certificate of its name, signed by the client authority of --tls-dir ("+layout.KeyClientCACert+"), besides its password")
	tlsDir := flags.String("tls-dir", "", "the Database's server certificate ("+layout.KeyTLSCert+", "+layout.KeyTLSKey+", "+layout.KeyCACert+"), served by the engine when present; \"\": no TLS")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dataDir == "" || *socket == "" {
		return errors.New("--data-dir and --socket are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The socket's directory is the pod's run emptyDir, which outlives a
	// restart of the container: the newest designation epoch is kept there.
	stateDir := *socket
	if *engineName != "postgres" {
		stateDir = filepath.Dir(*socket)
	}
	r, err := readRole(*instanceName, *bootstrapAs, *designationDir, stateDir, *cloneFrom, *replicationPasswordFile)
	if err != nil {
		return err
	}
	var engine instance.Engine
	switch *engineName {
	case "postgres":
		replication := postgres.Replication{PrimaryHost: *cloneFrom, Port: *clonePort, SlotName: layout.SlotName(r.name), Password: r.password,
			TLS: instance.TLS{Dir: *tlsDir}, PassFile: postgres.PassFile(*socket)}
		if r.replica {
			replication.CloneFrom = *cloneFrom
		}
		pg := &postgres.Engine{DataDir: *dataDir, ConfigFile: *configFile, SocketDir: *socket, Port: *port, ExtraArgs: flags.Args(), Replication: replication,
			ArchiveTimeout: *archiveTimeout, TLS: instance.TLS{Dir: *tlsDir}, RequireTLS: *requireTLS,
			RequireClientCertificate: *requireClientCertificate}
		if pg.Archive, pg.Restore, err = backupSettings(r); err != nil {
			return err
		}
		engine = pg
	case string(mysql.MariaDB), string(mysql.MySQL):
		replication := mysql.Replication{PrimaryHost: *cloneFrom, Port: *clonePort, InstancePort: *cloneInstancePort, Password: r.password,
			ServerID: r.ordinal + 1, SemiSync: *semiSync, TLS: instance.TLS{Dir: *tlsDir}}
		if r.replica {
			replication.CloneFrom = *cloneFrom
		}
		my := &mysql.Engine{Flavor: mysql.Flavor(*engineName), DataDir: *dataDir, Socket: *socket, DefaultsFile: *defaultsFile, ExtraArgs: flags.Args(), Replication: replication,
			ArchiveTimeout: *archiveTimeout, ConfigFile: *configFile, TLS: instance.TLS{Dir: *tlsDir}, RequireTLS: *requireTLS,
			RequireClientCertificate: *requireClientCertificate}
		if my.ConfigFile == "" && my.DefaultsFile == "" {
			my.ConfigFile = layout.MySQLConfigFile
		}
		if _, my.Restore, err = backupSettings(r); err != nil {
			return err
		}
		engine = my
	default:
		return fmt.Errorf("--engine: %q is not postgres, mariadb or mysql", *engineName)
	}
	if err := refuseNewPrimary(engine, r); err != nil {
		return err
	}
	files := instance.CredentialFiles{Dir: *credentialsDir, MonitoringPasswordFile: *monitoringPasswordFile, UsersFile: *usersFile}
	probes := instance.Probes{Address: *probeAddress, MaxReplicaLag: *maxReplicaLag, TLS: instance.TLS{Dir: *tlsDir},
		Metrics: instance.MetricsEndpoint{Address: *metricsAddress, TokenFile: *metricsTokenFile, DataDir: *dataDir}}
	membership := instance.Membership{Self: r.name, DesignationDir: *designationDir, StateDir: stateDir, Token: func() string { return r.password }}
	return instance.Run(ctx, engine, files, probes, membership, log.With("engine", *engineName))
}

// backupSettings reads whether this instance archives (the Database has a
// backup destination) and, for a new primary of a Database bootstrapped
// from a backup, what it restores.
func backupSettings(r role) (archive bool, restore *layout.RestoreSource, err error) {
	target, err := backup.TargetFromEnv()
	if err != nil {
		return false, nil, err
	}
	if !r.replica {
		if restore, err = backup.RestoreSourceFromEnv(); err != nil {
			return false, nil, err
		}
	}
	return target != nil, restore, nil
}

// role is what this instance is.
type role struct {
	name    string
	ordinal int
	replica bool
	// epoch is the designation's epoch; 0 without one.
	epoch    int64
	password string
}

// readRole decides whether this instance is the primary or a replica: the
// one the designation names is the primary (the files, or the newer one the
// operator told this instance of); without them,
// --bootstrap decides (auto: the instance of ordinal 0, its name ending in
// -0, is the primary).
func readRole(name, bootstrapAs, designationDir, stateDir, cloneFrom, passwordFile string) (role, error) {
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return role{}, err
		}
		name = host
	}
	r := role{name: name}
	if i := strings.LastIndex(name, "-"); i >= 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			r.ordinal = n
		}
	}
	if passwordFile != "" {
		data, err := os.ReadFile(passwordFile)
		if err != nil {
			return r, fmt.Errorf("reading the replication password: %w", err)
		}
		r.password = strings.TrimRight(string(data), "\n")
	}
	switch {
	case designationDir != "":
		d, err := instance.ReadCurrentDesignation(designationDir, stateDir)
		if err != nil {
			return r, err
		}
		r.replica, r.epoch = d.Primary != name, d.Epoch
	case bootstrapAs == "primary":
	case bootstrapAs == "replica":
		r.replica = true
	case bootstrapAs == "auto":
		r.replica = r.ordinal != 0
	default:
		return r, fmt.Errorf("--bootstrap: %q is not primary, replica or auto", bootstrapAs)
	}
	if r.replica && cloneFrom == "" {
		return r, errors.New("a replica needs --clone-from")
	}
	return r, nil
}

// refuseNewPrimary refuses to bootstrap a new, empty primary once the
// Database has failed over or switched over (epoch above 1): the designated
// primary had data, and creating an empty database in its place would hide
// that it was lost.
func refuseNewPrimary(engine instance.Engine, r role) error {
	if r.replica || r.epoch <= 1 {
		return nil
	}
	initialized, err := engine.Initialized()
	if err != nil || initialized {
		return err
	}
	return fmt.Errorf("this instance is designated the primary (epoch %d) but its data directory is empty: "+
		"refusing to create an empty database in place of the one it held; restore its volume, or designate another instance", r.epoch)
}
