package postgres

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// primaryAnswering listens on 127.0.0.1 as a PostgreSQL server would answer
// an SSLRequest: with answer ('S' or 'N'), then, after 'S', a TLS handshake
// serving served. It returns the port.
func primaryAnswering(t *testing.T, answer byte, served *pki.KeyPair) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	var config *tls.Config
	if served != nil {
		cert, err := tls.X509KeyPair(served.CertPEM, served.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		config = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				request := make([]byte, 8)
				if _, err := conn.Read(request); err != nil {
					return
				}
				if _, err := conn.Write([]byte{answer}); err != nil || answer != 'S' {
					return
				}
				_ = tls.Server(conn, config).Handshake()
			}()
		}
	}()
	return listener.Addr().(*net.TCPAddr).Port
}

// closedPort is a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	listener.Close()
	return port
}

// TestStandbySSLModeVerifiesWheneverItCan: a replica made in place
// verifies its next primary from its first connection when that primary
// serves a certificate of the authority, and when nothing answers while
// the pod has its certificate (the read-write Service of a switchover in
// progress); it does not when the pod has no certificate, when the primary
// serves no TLS, or serves a certificate of another authority.
func TestStandbySSLModeVerifiesWheneverItCan(t *testing.T) {
	now := time.Now()
	authority, err := pki.NewAuthority("test", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewAuthority("another", now)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := pki.IssueServer(authority, []string{"127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := pki.IssueServer(other, []string{"127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	withCertificate := instance.TLS{Dir: t.TempDir()}
	for path, content := range map[string][]byte{withCertificate.CertFile(): ours.CertPEM, withCertificate.KeyFile(): ours.KeyPEM, withCertificate.CAFile(): authority.CertPEM} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		tls  instance.TLS
		port int
		want string
	}{
		{"serving our certificate", withCertificate, primaryAnswering(t, 'S', &ours), sslVerifyFull},
		{"nothing answering", withCertificate, closedPort(t), sslVerifyFull},
		{"serving no TLS", withCertificate, primaryAnswering(t, 'N', nil), sslPrefer},
		{"serving another authority's certificate", withCertificate, primaryAnswering(t, 'S', &theirs), sslPrefer},
		{"this pod without a certificate", instance.TLS{Dir: t.TempDir()}, primaryAnswering(t, 'S', &ours), sslPrefer},
	} {
		e := &Engine{Replication: Replication{PrimaryHost: "127.0.0.1", Port: c.port, TLS: c.tls}}
		if got := e.standbySSLMode(context.Background()); got != c.want {
			t.Errorf("%s: sslmode %q, want %q", c.name, got, c.want)
		}
	}
}
