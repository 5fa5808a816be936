// Package instance is the program that runs in every database pod, the only
// code that drives the engine: it bootstraps an empty data directory, keeps
// the engine's users equal to the credentials Secret, runs the engine as its
// child and shuts it down cleanly. The engine families live in subpackages.
package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Credentials are the values of the Database's credentials Secret.
type Credentials struct {
	// Username owns the application database, which has the same name.
	Username string
	// Password is the application user's password.
	Password string
	// SuperuserPassword is the password of the engine's superuser, which
	// dbpilot keeps for itself.
	SuperuserPassword string
	// MonitoringPassword is the monitoring user's password; empty: no
	// monitoring user.
	MonitoringPassword string
}

// RefuseReservedUser refuses an application user that is one dbpilot
// keeps for itself in engine (layout.ReservedUsers), before anything is
// applied; nil for any other.
func RefuseReservedUser(engine, name string) error {
	if !layout.IsReservedUser(engine, name) {
		return nil
	}
	return fmt.Errorf("the application user may not be %q: dbpilot keeps that user for itself (the credentials Secret's %s)", name, layout.KeyUsername)
}

// ReadCredentials reads the credentials Secret's files from dir and the
// monitoring password from monitoringFile, when it is set and exists (a
// Secret that gains the key later reaches the mounted files later).
func ReadCredentials(dir, monitoringFile string) (Credentials, error) {
	read := func(key string) (string, error) {
		data, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			return "", fmt.Errorf("reading credential %q: %w", key, err)
		}
		value := strings.TrimRight(string(data), "\n")
		if value == "" {
			return "", fmt.Errorf("credential %q is empty", key)
		}
		return value, nil
	}
	var c Credentials
	var err error
	if c.Username, err = read(layout.KeyUsername); err != nil {
		return c, err
	}
	if c.Password, err = read(layout.KeyPassword); err != nil {
		return c, err
	}
	if c.SuperuserPassword, err = read(layout.KeySuperuserPassword); err != nil {
		return c, err
	}
	if monitoringFile != "" {
		data, err := os.ReadFile(monitoringFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return c, fmt.Errorf("reading the monitoring password: %w", err)
		}
		c.MonitoringPassword = strings.TrimRight(string(data), "\n")
	}
	return c, nil
}

// CredentialFiles are where the passwords the engine's users must have are
// mounted.
type CredentialFiles struct {
	// Dir holds the credentials Secret's files.
	Dir string
	// MonitoringPasswordFile is the monitoring user's password; optional.
	MonitoringPasswordFile string
	// UsersFile lists the users of spec.users (layout.UsersFile);
	// optional.
	UsersFile string
}

// Probes configure the program's HTTP server.
type Probes struct {
	// Address is where the probes, /status and the actions are served.
	Address string
	// TLS is the Database's server certificate: with it mounted, they are
	// served over HTTPS with it, so the operator verifies the instance
	// and its token travels encrypted (a pod without it serves HTTP).
	TLS TLS
	// MaxReplicaLag is how far a replica may be behind its primary and still
	// be ready; 0: no bound.
	MaxReplicaLag time.Duration
	// Metrics is the engine metrics server, on a port of its own.
	Metrics MetricsEndpoint
}

// Engine is what the supervisor needs from an engine family.
type Engine interface {
	// Initialized reports whether the data directory holds a database.
	Initialized() (bool, error)
	// Bootstrap creates a new database in an empty data directory.
	Bootstrap(ctx context.Context, creds Credentials) error
	// ServerCommand is the engine's server process.
	ServerCommand() *exec.Cmd
	// Ping opens a local session and closes it: the server accepts
	// connections.
	Ping(ctx context.Context) error
	// EnsureUsers makes the superuser, the application user (and its
	// database) and the monitoring user exist with the credentials'
	// passwords.
	EnsureUsers(ctx context.Context, creds Credentials) error
	// StopSignal makes the server shut down cleanly (PostgreSQL: a fast
	// shutdown with a checkpoint).
	StopSignal() os.Signal
}

// DataPreparer is an engine that checks existing data before the server
// starts: a replica whose data can no longer follow its primary is emptied
// (so it is bootstrapped again) or refused.
type DataPreparer interface {
	PrepareData(ctx context.Context, creds Credentials, log *slog.Logger) error
}

// ActionServer is an engine with endpoints of its own on the program's HTTP
// server, by ServeMux pattern ("POST /path"); each authenticates its
// callers (RequireToken).
type ActionServer interface {
	Actions() map[string]http.Handler
}

// ExitExplainer is an engine that can tell why its server stopped on its
// own when the reason matters to the operator (a restore that cannot
// finish).
type ExitExplainer interface {
	// ExplainExit says why, or "" when it has nothing to add.
	ExplainExit() string
}

// explainExit adds the engine's explanation to an exit error.
func explainExit(engine Engine, err error) error {
	if explainer, ok := engine.(ExitExplainer); ok {
		if why := explainer.ExplainExit(); why != "" {
			return fmt.Errorf("%s (%w)", why, err)
		}
	}
	return err
}

// startupTimeout bounds how long the server may take to accept connections
// after it starts (crash recovery included).
const startupTimeout = 10 * time.Minute

// Run bootstraps the engine if its data directory is empty, starts it,
// applies the credentials and supervises it until ctx ends (the pod is
// stopping: the engine is shut down cleanly) or the engine exits (an error,
// so the container exits and the kubelet restarts it).
func Run(ctx context.Context, engine Engine, files CredentialFiles, probes Probes, membership Membership, log *slog.Logger) error {
	creds, err := ReadCredentials(files.Dir, files.MonitoringPasswordFile)
	if err != nil {
		return err
	}
	// Probes are answered from the start: alive while bootstrapping, ready
	// only once the engine accepts sessions with the credentials applied.
	demote := make(chan demotion)
	endpoints := &probeServer{engine: engine, maxReplicaLag: probes.MaxReplicaLag, membership: membership, demote: demote,
		stopFenced: make(chan chan struct{}), unfenced: make(chan struct{}, 1)}
	if backuper, ok := engine.(Backuper); ok {
		endpoints.backups = &backupJobs{engine: backuper, self: membership.Self, target: backup.TargetFromEnv, ctx: ctx, log: log,
			jobs: map[string]*layout.BackupJob{}}
	}
	if err := endpoints.start(probes.Address, probes.TLS); err != nil {
		return err
	}
	defer endpoints.stop()
	stopMetrics, err := startMetrics(probes.Metrics, endpoints)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if isFenced(membership.StateDir) {
		// Fenced for investigation: the engine stays stopped, the data
		// untouched, until the operator unfences the instance.
		log.Info("this instance is fenced: the engine stays stopped until it is unfenced")
		select {
		case <-ctx.Done():
			return nil
		case <-endpoints.unfenced:
			return errors.New("unfenced: the next start runs the engine")
		}
	}
	if preparer, ok := engine.(DataPreparer); ok {
		if err := preparer.PrepareData(ctx, creds, log); err != nil {
			return err
		}
	}
	initialized, err := engine.Initialized()
	if err != nil {
		return err
	}
	if !initialized {
		log.Info("bootstrapping a new database")
		if err := engine.Bootstrap(ctx, creds); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
	}
	if follower, ok := engine.(ParametersFollower); ok {
		// Never in the way of a start: what cannot be applied now is
		// applied once the server runs.
		if refused, err := follower.FollowParameters(ctx, false); err != nil {
			log.Error("applying spec.parameters before the start; retrying once the engine runs", "error", err.Error())
		} else if refused != "" {
			log.Error("the server refuses spec.parameters: starting with the settings as they were", "refused", refused)
		}
	}
	server := engine.ServerCommand()
	var certificate engineCertificate
	certificate.starting(engine, time.Now())
	server.Stdout, server.Stderr = os.Stdout, os.Stderr
	// The server gets its own process group, so a terminal's Ctrl-C meant for
	// this program does not reach it before the clean shutdown does.
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := server.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", server.Path, err)
	}
	log.Info("engine started", "pid", server.Process.Pid)
	endpoints.setEngineCertificate(certificate.served)
	endpoints.setClientAuthorities(certificate.clientAuthority.applied)
	endpoints.engineRunning.Store(true)
	defer endpoints.engineRunning.Store(false)
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()

	stop := func(reason string) error {
		log.Info("stopping the engine", "reason", reason)
		_ = server.Process.Signal(engine.StopSignal())
		err := <-exited
		log.Info("engine stopped", "result", exitDescription(err))
		return err
	}

	// A replica whose data can no longer follow its primary is stopped
	// and emptied: the container exits and the next start clones again.
	unusable := make(chan string, 1)
	watcher, watched := engine.(DataWatcher)
	if watched {
		watchCtx, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		go watchData(watchCtx, watcher, unusable)
	}
	discard := func(why string) error {
		log.Info("this replica's data can no longer follow its primary: cloning the primary again on the next start", "why", why)
		stopErr := stop("unusable replica data")
		if err := watcher.Discard(); err != nil {
			return errors.Join(fmt.Errorf("emptying the unusable data directory: %w", err), stopErr)
		}
		return fmt.Errorf("the replica's data was emptied to be cloned again: %s", why)
	}

	if archiver, ok := engine.(LogArchiver); ok {
		archiveCtx, stopArchiving := context.WithCancel(ctx)
		defer stopArchiving()
		go archiveLogs(archiveCtx, archiver, log)
	}

	// A primary the operator replaced while it was away stops taking
	// writes and follows the new primary.
	watchCtx, stopWatchingDesignation := context.WithCancel(ctx)
	defer stopWatchingDesignation()
	go watchDesignation(watchCtx, membership, engine, demote)
	// demoteNow demotes the running primary; it returns nil when the
	// engine was left running (the demotion was refused before it
	// stopped), so supervision goes on.
	demoteNow := func(req demotion) error {
		log.Info("demoting this primary to a replica", "why", req.why)
		demoter, ok := engine.(Demoter)
		if !ok {
			req.done <- demoted{err: errors.New("this engine cannot be demoted")}
			return nil
		}
		stopped := false
		var stopErr error
		position, err := demoter.Demote(ctx, func() error {
			stopped, stopErr = true, stop("demotion")
			return nil
		})
		if err == nil && stopErr != nil {
			log.Info("the engine's stop reported an error", "error", exitDescription(stopErr))
		}
		req.done <- demoted{position: position, err: err}
		switch {
		case err != nil && !stopped:
			log.Info("the demotion was refused; the engine keeps running", "error", err.Error())
			return nil
		case err != nil:
			return fmt.Errorf("demotion: %w", err)
		}
		return fmt.Errorf("demoted (%s): the next start follows the designated primary", req.why)
	}

	readyCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	ready := make(chan error, 1)
	go func() { ready <- WaitFor(readyCtx, engine.Ping) }()
	select {
	case err := <-exited:
		cancel()
		return explainExit(engine, fmt.Errorf("engine exited during startup: %s", exitDescription(err)))
	case why := <-unusable:
		cancel()
		return discard(why)
	case err := <-ready:
		cancel()
		if err != nil {
			return errors.Join(fmt.Errorf("engine never accepted connections: %w", err), stop("startup failed"))
		}
	}
	if err := engine.EnsureUsers(ctx, creds); err != nil {
		return errors.Join(fmt.Errorf("applying credentials: %w", err), stop("credentials failed"))
	}
	endpoints.setUsersApplied()
	log.Info("engine ready, credentials applied")
	kept := &managedUsers{file: files.UsersFile, published: &endpoints.managedUsers, promotions: &endpoints.promotions}
	usersCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
	kept.follow(usersCtx, engine, creds.Username, time.Now(), log)
	cancel()

	// The kubelet updates a mounted Secret's files in place: a changed
	// Secret is applied to the running engine, without a restart (one
	// changed while it started included).
	ticker := time.NewTicker(credentialsPollInterval)
	defer ticker.Stop()
	var secured time.Time
	for {
		select {
		case err := <-exited:
			return explainExit(engine, fmt.Errorf("engine exited: %s", exitDescription(err)))
		case why := <-unusable:
			return discard(why)
		case req := <-demote:
			if err := demoteNow(req); err != nil {
				return err
			}
		case done := <-endpoints.stopFenced:
			err := stop("fenced")
			close(done)
			return fmt.Errorf("fenced (the engine stopped: %s): the next start keeps it stopped until the instance is unfenced", exitDescription(err))
		case <-ctx.Done():
			if err := stop("shutdown requested"); err != nil {
				return fmt.Errorf("engine shutdown: %s", exitDescription(err))
			}
			return nil
		case <-ticker.C:
			if follower, ok := engine.(ConfigFollower); ok {
				followCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
				if err := follower.FollowConfig(followCtx); err != nil {
					log.Error("applying the changed configuration file; retrying", "error", err.Error())
				}
				cancel()
			}
			if follower, ok := engine.(ParametersFollower); ok {
				followCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
				if refused, err := follower.FollowParameters(followCtx, true); err != nil {
					log.Error("applying spec.parameters; retrying", "error", err.Error())
				} else if refused != "" {
					log.Error("the server refuses spec.parameters: keeping the settings as they were", "refused", refused)
				}
				cancel()
			}
			if why := clientAuthorityArrived(engine); why != "" {
				err := stop(why)
				return fmt.Errorf("%s (the engine stopped: %s): the next start verifies client certificates", why, exitDescription(err))
			}
			reloadCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
			if certificate.follow(reloadCtx, engine, time.Now(), log) {
				endpoints.setEngineCertificate(certificate.served)
			}
			endpoints.setClientAuthorities(certificate.clientAuthority.applied)
			cancel()
			if securer, ok := engine.(ReplicationSecurer); ok && time.Since(secured) >= secureReplicationInterval {
				secured = time.Now()
				secureCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
				if changed, err := securer.SecureReplication(secureCtx); err != nil {
					log.Error("verifying the primary's certificate for replication; retrying", "error", err.Error())
				} else if changed {
					log.Info("replication now verifies the primary's certificate")
				}
				cancel()
			}
			creds = followCredentials(ctx, engine, files, creds, log)
			// After the credentials: a user of spec.users is never
			// one the application user was just renamed to.
			usersCtx, cancel := context.WithTimeout(ctx, credentialsPollInterval)
			kept.follow(usersCtx, engine, creds.Username, time.Now(), log)
			cancel()
		}
	}
}

// followCredentials applies the credentials Secret's files when they
// changed since applied, and returns what the engine has applied.
func followCredentials(ctx context.Context, engine Engine, files CredentialFiles, applied Credentials, log *slog.Logger) Credentials {
	latest, err := ReadCredentials(files.Dir, files.MonitoringPasswordFile)
	if err != nil {
		log.Error("reading the credentials", "error", err.Error())
		return applied
	}
	if latest == applied {
		return applied
	}
	if err := engine.EnsureUsers(ctx, latest); err != nil {
		log.Error("applying changed credentials; retrying", "error", err.Error())
		return applied
	}
	log.Info("credentials changed in the Secret: applied to the engine")
	return latest
}

// credentialsPollInterval is how often the credentials files are read for a
// change.
const credentialsPollInterval = 2 * time.Second

func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// WaitFor calls try every 100 ms until it succeeds or ctx ends, returning
// the last error.
func WaitFor(ctx context.Context, try func(context.Context) error) error {
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
