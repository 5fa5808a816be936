package instance

import (
	"context"
	"os"
	"path/filepath"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// TLS is where the Database's server certificate is mounted (the Secret's
// files, which the kubelet replaces when dbpilot renews it). The zero value
// serves no TLS: a pod from before dbpilot issued certificates has none.
type TLS struct {
	Dir string
}

// CertFile, KeyFile and CAFile are the certificate served, its key, and
// the authority's certificate the other instances are verified with.
func (t TLS) CertFile() string { return filepath.Join(t.Dir, layout.KeyTLSCert) }

// KeyFile is the served certificate's private key.
func (t TLS) KeyFile() string { return filepath.Join(t.Dir, layout.KeyTLSKey) }

// CAFile is the Database's certificate authority's certificate.
func (t TLS) CAFile() string { return filepath.Join(t.Dir, layout.KeyCACert) }

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

// TLSReloader is an engine that serves TLS and takes a renewed certificate
// while it runs.
type TLSReloader interface {
	// TLSFiles are where its certificate is.
	TLSFiles() TLS
	// ReloadTLS has the running server read its certificate again.
	ReloadTLS(ctx context.Context) error
}

// followTLS has the engine reload its certificate when the mounted one
// changed since it was last read; it returns whether it reloaded.
func followTLS(ctx context.Context, engine Engine, followed *FollowedFile) (bool, error) {
	reloader, ok := engine.(TLSReloader)
	if !ok || !reloader.TLSFiles().Enabled() {
		return false, nil
	}
	content, changed, err := followed.Changed(reloader.TLSFiles().CertFile())
	if err != nil || !changed {
		return false, err
	}
	if err := reloader.ReloadTLS(ctx); err != nil {
		return false, err
	}
	followed.Applied(content)
	return true, nil
}
