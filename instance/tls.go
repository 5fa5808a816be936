package instance

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// TLS is where the Database's server certificate is mounted (the Secret's
// files, which the kubelet replaces when dbpilot renews it). The zero value
// serves no TLS: a pod from before dbpilot issued certificates has none.
type TLS struct {
	Dir string
}

// CertFile is the certificate served.
func (t TLS) CertFile() string { return filepath.Join(t.Dir, layout.KeyTLSCert) }

// KeyFile is the served certificate's private key.
func (t TLS) KeyFile() string { return filepath.Join(t.Dir, layout.KeyTLSKey) }

// CAFile is the Database's certificate authority's certificate, which the
// other instances are verified with.
func (t TLS) CAFile() string { return filepath.Join(t.Dir, layout.KeyCACert) }

// ClientCAFile is the certificate of the authority of the Database's
// client certificates, which the engine verifies them with; it may be
// missing (a Secret from before client certificates).
func (t TLS) ClientCAFile() string { return filepath.Join(t.Dir, layout.KeyClientCACert) }

// VerifiesClients reports whether there is a certificate to serve and a
// client authority to verify client certificates with.
func (t TLS) VerifiesClients() bool {
	if !t.Enabled() {
		return false
	}
	_, err := os.Stat(t.ClientCAFile())
	return err == nil
}

// Enabled reports whether there is a certificate to serve.
func (t TLS) Enabled() bool {
	if t.Dir == "" {
		return false
	}
	for _, path := range []string{t.CertFile(), t.KeyFile(), t.CAFile()} {
		if _, err := os.Stat(path); err != nil {
			return false
		}
	}
	return true
}

// MountedDigests are the digests of the mounted certificate, authorities
// and client authorities (layout.FileDigest), each empty when its file
// cannot be read.
func (t TLS) MountedDigests() (certificate, authorities, clientAuthorities string) {
	if t.Dir == "" {
		return "", "", ""
	}
	digest := func(path string) string {
		content, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return layout.FileDigest(content)
	}
	return digest(t.CertFile()), digest(t.CAFile()), digest(t.ClientCAFile())
}

// VerifyingConfig is a client's TLS configuration that verifies a server's
// certificate for host against the Database's authority.
func (t TLS) VerifyingConfig(host string) (*tls.Config, error) {
	authority, err := os.ReadFile(t.CAFile())
	if err != nil {
		return nil, err
	}
	return pki.VerifyingConfig(authority, host)
}

// ClientVerifier is an engine that verifies client certificates with the
// mounted client authority (TLS.ClientCAFile), which it reads as it
// starts.
type ClientVerifier interface {
	// VerifiesClients reports whether the running server verifies
	// client certificates with the client authority, and whether it
	// needs to (the application user's certificate is required).
	VerifiesClients() (verifies, needs bool)
}

// TLSReloader is an engine that serves TLS and takes a renewed certificate
// while it runs.
type TLSReloader interface {
	// TLSFiles are where its certificate is.
	TLSFiles() TLS
	// ReloadTLS has the running server read its certificate again.
	ReloadTLS(ctx context.Context) error
}

// CertificatePresenter is an engine whose running server can be asked, in
// a TLS handshake, which certificate it serves.
type CertificatePresenter interface {
	// PresentedCertificate completes a TLS handshake with the running
	// server, logging in as no one, and returns the leaf certificate
	// (DER) it presented.
	PresentedCertificate(ctx context.Context) ([]byte, error)
}

// ReplicationSecurer is an engine whose replica may connect to its primary
// without verifying the primary's certificate (it was cloned or rejoined
// while the primary served no TLS, or before dbpilot issued certificates),
// and that switches to a verified connection once the primary serves its
// certificate.
type ReplicationSecurer interface {
	// SecureReplication verifies the primary's certificate and, when it
	// verifies, makes replication use it; it reports whether it changed
	// the connection. A primary or a replica already verifying changes
	// nothing.
	SecureReplication(ctx context.Context) (bool, error)
}

// secureReplicationInterval is how often a replica looks at whether its
// connection to the primary can be verified.
const secureReplicationInterval = 10 * time.Second

// ServerConfig serves the mounted certificate, read again when the
// kubelet replaces it (each handshake looks at the files' time and size).
func (t TLS) ServerConfig() *tls.Config {
	served := &servedCertificate{tls: t}
	return &tls.Config{GetCertificate: served.get, MinVersion: tls.VersionTLS12}
}

// servedCertificate is the certificate last read from the mounted files.
type servedCertificate struct {
	tls     TLS
	mu      sync.Mutex
	version string
	cert    *tls.Certificate
}

func (s *servedCertificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	info, err := os.Stat(s.tls.CertFile())
	if err != nil {
		return nil, err
	}
	version := info.ModTime().String() + "/" + strconv.FormatInt(info.Size(), 10)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && version == s.version {
		return s.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(s.tls.CertFile(), s.tls.KeyFile())
	if err != nil {
		return nil, err
	}
	s.cert, s.version = &cert, version
	return s.cert, nil
}
