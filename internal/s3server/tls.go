package s3server

import (
	"os"
	"path/filepath"
	"time"

	"github.com/dbpilot/dbpilot/internal/pki"
)

// writeTLS makes a CA and a server certificate for host, signed by it, in
// dir: tls.crt and tls.key. It returns the CA's PEM.
func writeTLS(dir, host string) (ca []byte, certFile, keyFile string, err error) {
	now := time.Now()
	authority, err := pki.NewAuthority("s3server test CA", now)
	if err != nil {
		return nil, "", "", err
	}
	server, err := pki.IssueServer(authority, []string{host}, now)
	if err != nil {
		return nil, "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, server.CertPEM, 0o600); err != nil {
		return nil, "", "", err
	}
	if err := os.WriteFile(keyFile, server.KeyPEM, 0o600); err != nil {
		return nil, "", "", err
	}
	return authority.CertPEM, certFile, keyFile, nil
}
