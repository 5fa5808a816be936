package mysql

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// TestRejoinVerifiesTLSWheneverItCan: a former primary rejoins verifying
// its next primary when nothing answers yet while it has its certificate
// (the switchover's target not promoted yet); not without a certificate,
// nor when something answers that it cannot verify.
func TestRejoinVerifiesTLSWheneverItCan(t *testing.T) {
	authority, err := pki.NewAuthority("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	server, err := pki.IssueServer(authority, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	withCertificate := instance.TLS{Dir: t.TempDir()}
	for path, content := range map[string][]byte{withCertificate.CertFile(): server.CertPEM, withCertificate.KeyFile(): server.KeyPEM, withCertificate.CAFile(): authority.CertPEM} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := listener.Addr().(*net.TCPAddr).Port
	listener.Close()
	// A server that answers and hangs up: no MySQL handshake, nothing to
	// verify.
	hangsUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangsUp.Close()
	go func() {
		for {
			conn, err := hangsUp.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	for _, c := range []struct {
		name string
		tls  instance.TLS
		port int
		want bool
	}{
		{"nothing answering", withCertificate, closed, true},
		{"nothing answering, this pod without a certificate", instance.TLS{Dir: t.TempDir()}, closed, false},
		{"a server it cannot verify", withCertificate, hangsUp.Addr().(*net.TCPAddr).Port, false},
	} {
		r := Replication{PrimaryHost: "127.0.0.1", Port: c.port, Password: "pw", TLS: c.tls}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if got := r.rejoinVerifiesTLS(ctx); got != c.want {
			t.Errorf("%s: verifies %t, want %t", c.name, got, c.want)
		}
		cancel()
	}
}
