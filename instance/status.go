package instance

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// Status is what an instance reports about itself at layout.StatusPath; the
// operator reads it to label roles and fill status.instances. It holds no
// secret.
type Status = layout.InstanceStatus

// StatusReporter is an engine that can describe itself.
type StatusReporter interface {
	Status(ctx context.Context) (Status, error)
}

// statusHandler answers layout.StatusPath.
func (p *probeServer) statusHandler(w http.ResponseWriter, r *http.Request) {
	reporter, ok := p.engine.(StatusReporter)
	if !ok {
		http.Error(w, "this engine reports no status", http.StatusNotImplemented)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	var status Status
	if isFenced(p.membership.StateDir) && !p.engineRunning.Load() {
		status.Fenced = true
	} else {
		var err error
		if status, err = reporter.Status(ctx); err != nil {
			http.Error(w, "the engine does not answer", http.StatusServiceUnavailable)
			return
		}
		status.Fenced = isFenced(p.membership.StateDir)
	}
	status.CredentialsApplied = p.usersApplied.Load()
	status.Users = p.managedUsers.Load().report(p.token())
	if p.membership.DesignationDir != "" {
		if d, err := ReadDesignation(p.membership.DesignationDir); err == nil {
			status.DesignatedPrimary, status.Epoch = d.Primary, d.Epoch
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(status)
}

// certificatesHandler answers layout.CertificatesPath, whether the engine
// runs or not.
func (p *probeServer) certificatesHandler(w http.ResponseWriter, _ *http.Request) {
	var status layout.CertificateStatus
	status.MountedCertificate, status.MountedAuthorities, status.ClientAuthorities = p.tls.MountedDigests()
	status.ServedCertificate = status.MountedCertificate
	if p.engineRunning.Load() {
		status.ServedCertificate = ""
		if served := p.engineCertificate.Load(); served != nil {
			status.ServedCertificate = *served
		}
		if verified := p.clientAuthorities.Load(); verified != nil {
			status.ClientAuthorities = *verified
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(status)
}

// setClientAuthorities records the client authorities the running engine
// verifies client certificates with (the file's content it read); nil
// when it verifies none.
func (p *probeServer) setClientAuthorities(content *string) {
	storeDigest(&p.clientAuthorities, content)
}

// setEngineCertificate records the certificate the running engine serves
// (the content of the file whose certificate it presented); nil when
// unknown.
func (p *probeServer) setEngineCertificate(content *string) {
	storeDigest(&p.engineCertificate, content)
}

// storeDigest stores the digest of content (layout.FileDigest) in to; nil
// when content is nil.
func storeDigest(to *atomic.Pointer[string], content *string) {
	if content == nil {
		to.Store(nil)
		return
	}
	digest := layout.FileDigest([]byte(*content))
	to.Store(&digest)
}
