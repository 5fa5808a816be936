package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// probeServer answers the kubelet's probes. /healthz: the program runs (it
// exits when the engine does, so a live program means a live engine).
// /readyz: the engine accepts a local session now, the credentials have
// been applied since it started, and a replica is no further behind its
// primary than maxReplicaLag.
type probeServer struct {
	engine        Engine
	maxReplicaLag time.Duration
	membership    Membership
	// demote carries the operator's demotion requests to the supervisor.
	demote chan demotion
	// stopFenced asks the supervisor to stop a running engine that was
	// just fenced; unfenced ends a fenced wait.
	stopFenced chan chan struct{}
	unfenced   chan struct{}
	// engineRunning is true while the supervisor runs the engine.
	engineRunning atomic.Bool
	usersApplied  atomic.Bool
	// managedUsers is what the primary kept of spec.users, nil on a
	// replica and before the first look.
	managedUsers atomic.Pointer[keptUsers]
	// promotions counts the promotions the operator asked for and got.
	promotions atomic.Int64
	// backups runs base backups; nil for an engine that takes none.
	backups *backupJobs
	server  *http.Server
	// tls is where the pod's certificate is mounted; engineCertificate
	// is the digest of the one the running engine serves, nil until known.
	tls               TLS
	engineCertificate atomic.Pointer[string]
	// clientAuthorities is the digest of the client authorities the
	// running engine verifies client certificates with, nil while it
	// verifies none.
	clientAuthorities atomic.Pointer[string]
}

func (p *probeServer) setUsersApplied() { p.usersApplied.Store(true) }

func (p *probeServer) start(addr string, tlsFiles TLS) error {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("probe server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+layout.LivenessPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+layout.ReadinessPath, p.readiness)
	mux.HandleFunc("GET "+layout.StatusPath, p.statusHandler)
	mux.HandleFunc("GET "+layout.CertificatesPath, p.certificatesHandler)
	if promoter, ok := p.engine.(Promoter); ok {
		mux.Handle("POST "+layout.PromotePath, RequireToken(p.token, promoteHandler(promoter, p.membership.StateDir, p.membership.Self, func() { p.promotions.Add(1) })))
	}
	if _, ok := p.engine.(Demoter); ok {
		mux.Handle("POST "+layout.DemotePath, RequireToken(p.token, demoteHandler(p.demote, p.membership.StateDir)))
	}
	mux.Handle("POST "+layout.FencePath, RequireToken(p.token, fenceHandler(p.membership.StateDir, p.stopFenced, p.engineRunning.Load)))
	mux.Handle("POST "+layout.UnfencePath, RequireToken(p.token, unfenceHandler(p.membership.StateDir, p.unfenced)))
	if p.backups != nil {
		mux.Handle("POST "+layout.BackupsPath, RequireToken(p.token, http.HandlerFunc(p.backups.start)))
		mux.Handle("GET "+layout.BackupsPath+"/{name}", RequireToken(p.token, http.HandlerFunc(p.backups.get)))
		mux.Handle("DELETE "+layout.BackupsPath+"/{name}", RequireToken(p.token, http.HandlerFunc(p.backups.remove)))
	}
	if actions, ok := p.engine.(ActionServer); ok {
		for pattern, handler := range actions.Actions() {
			mux.Handle(pattern, handler)
		}
	}
	p.tls = tlsFiles
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if tlsFiles.Enabled() {
		p.server.TLSConfig = tlsFiles.ServerConfig()
		go func() { _ = p.server.ServeTLS(listener, "", "") }()
		return nil
	}
	go func() { _ = p.server.Serve(listener) }()
	return nil
}

// token is what the operator's requests must carry; "" refuses them all.
func (p *probeServer) token() string {
	if p.membership.Token == nil {
		return ""
	}
	return p.membership.Token()
}

func (p *probeServer) readiness(w http.ResponseWriter, r *http.Request) {
	if isFenced(p.membership.StateDir) {
		http.Error(w, "fenced: the engine is stopped until the instance is unfenced", http.StatusServiceUnavailable)
		return
	}
	if !p.usersApplied.Load() {
		http.Error(w, "credentials not applied yet", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := p.engine.Ping(ctx); err != nil {
		http.Error(w, "engine does not accept connections", http.StatusServiceUnavailable)
		return
	}
	if behind := p.replicaBehind(ctx); behind != "" {
		http.Error(w, behind, http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// replicaBehind describes how far a replica lags when that is more than
// maxReplicaLag, so it leaves the -ro Service until it catches up; "" when
// it is within the bound, is a primary, or the bound is off.
func (p *probeServer) replicaBehind(ctx context.Context) string {
	reporter, ok := p.engine.(StatusReporter)
	if !ok || p.maxReplicaLag <= 0 {
		return ""
	}
	status, err := reporter.Status(ctx)
	if err != nil {
		return "the engine does not report its replication state"
	}
	if status.Role != layout.RoleReplica || status.LagSeconds == nil {
		return ""
	}
	lag := time.Duration(*status.LagSeconds * float64(time.Second))
	if lag <= p.maxReplicaLag {
		return ""
	}
	return fmt.Sprintf("the replica is %s behind its primary (bound %s)", lag.Round(time.Second), p.maxReplicaLag)
}

func (p *probeServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.server.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = p.server.Close()
	}
}
