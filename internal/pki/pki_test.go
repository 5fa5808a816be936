package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

var names = []string{"orders-rw", "orders-rw.shop.svc", "*.orders-headless.shop.svc"}

func authority(t *testing.T) KeyPair {
	t.Helper()
	ca, err := NewAuthority("orders", now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func server(t *testing.T, ca KeyPair, dnsNames []string, at time.Time) KeyPair {
	t.Helper()
	pair, err := IssueServer(ca, dnsNames, at)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// handshake serves TLS with pair and connects to it trusting ca, for
// serverName; it returns the client's error.
func handshake(t *testing.T, pair, ca KeyPair, serverName string) error {
	t.Helper()
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatal("the authority's certificate does not parse")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_ = tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake()
	}()
	conn, err := net.DialTimeout("tcp", listener.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return tls.Client(conn, &tls.Config{RootCAs: roots, ServerName: serverName}).Handshake()
}

func TestIssuedServerVerifiesForItsNamesAgainstTheAuthority(t *testing.T) {
	ca := authority(t)
	pair := server(t, ca, names, time.Now())
	for _, name := range []string{"orders-rw", "orders-rw.shop.svc", "orders-1.orders-headless.shop.svc"} {
		if err := handshake(t, pair, ca, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := handshake(t, pair, ca, "orders-ro.shop.svc"); err == nil {
		t.Error("a name the certificate does not carry verified")
	}
	if err := handshake(t, pair, authority(t), "orders-rw"); err == nil {
		t.Error("verified against another authority")
	}
	withIP := server(t, ca, []string{"localhost", "127.0.0.1"}, time.Now())
	if err := handshake(t, withIP, ca, "127.0.0.1"); err != nil {
		t.Errorf("an IP address among the names: %v", err)
	}
	if reason, _ := ServerRenewal(withIP, ca, []string{"127.0.0.1", "localhost"}, time.Now()); reason != "" {
		t.Errorf("the same names in another order: renewal because %q", reason)
	}
}

func TestServerRenewal(t *testing.T) {
	ca := authority(t)
	good := server(t, ca, names, now)
	other := server(t, authority(t), names, now)
	cases := []struct {
		name   string
		server KeyPair
		names  []string
		at     time.Time
		reason string
	}{
		{"good", good, names, now, ""},
		{"good until 30 days before expiry", good, names, now.Add(ServerValidity - RenewBefore - time.Minute), ""},
		{"missing", KeyPair{}, names, now, "there is none"},
		{"another authority's", other, names, now, "did not sign it"},
		{"names changed", good, names[:2], now, "names it is reached by changed"},
		{"expiring", good, names, now.Add(ServerValidity - RenewBefore), "it expires at 2027-11-25T12:00:00Z"},
		{"key of another certificate", KeyPair{CertPEM: good.CertPEM, KeyPEM: other.KeyPEM}, names, now, "not the certificate's"},
		{"garbage", KeyPair{CertPEM: []byte("x"), KeyPEM: []byte("y")}, names, now, "no PEM certificate"},
	}
	for _, c := range cases {
		reason, renewAt := ServerRenewal(c.server, ca, c.names, c.at)
		switch {
		case c.reason == "" && reason != "":
			t.Errorf("%s: renewal because %q", c.name, reason)
		case c.reason == "" && !renewAt.Equal(now.Add(ServerValidity-RenewBefore)):
			t.Errorf("%s: renew at %s, want 30 days before expiry", c.name, renewAt)
		case c.reason != "" && !strings.Contains(reason, c.reason):
			t.Errorf("%s: reason %q, want %q", c.name, reason, c.reason)
		}
	}
}

func TestAuthorityProblem(t *testing.T) {
	ca := authority(t)
	cases := map[string]struct {
		pair    KeyPair
		at      time.Time
		problem string
	}{
		"good":             {ca, now, ""},
		"expired":          {ca, now.Add(AuthorityValidity + time.Minute), "expired at 2036"},
		"a server":         {server(t, ca, names, now), now, "not a certificate authority"},
		"another's key":    {KeyPair{CertPEM: ca.CertPEM, KeyPEM: authority(t).KeyPEM}, now, "not the certificate's"},
		"no key":           {KeyPair{CertPEM: ca.CertPEM}, now, "no PEM private key"},
		"not a key at all": {KeyPair{CertPEM: ca.CertPEM, KeyPEM: ca.CertPEM}, now, "parsing the private key"},
	}
	for name, c := range cases {
		if problem := AuthorityProblem(c.pair, c.at); !strings.Contains(problem, c.problem) || (c.problem == "") != (problem == "") {
			t.Errorf("%s: problem %q, want %q", name, problem, c.problem)
		}
	}
	if _, err := IssueServer(KeyPair{}, names, now); err == nil {
		t.Error("issued with no authority")
	}
	if _, err := IssueServer(ca, nil, now); err == nil {
		t.Error("issued for no name")
	}
}
