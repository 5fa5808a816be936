package instance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// reloadingServer stands for an engine that serves the mounted certificate
// and, like PostgreSQL, loads a new one after it was asked to, on its own
// time (when the test calls load), or never (a certificate it refuses).
type reloadingServer struct {
	idleEngine
	files   TLS
	loaded  []byte
	reloads int
	probes  int
	down    bool
	// refuse fails a reload, as MariaDB's FLUSH SSL does with a
	// certificate it cannot load.
	refuse bool
}

func (s *reloadingServer) TLSFiles() TLS { return s.files }

func (s *reloadingServer) ReloadTLS(context.Context) error {
	s.reloads++
	if s.refuse {
		return errors.New("Failed to refresh SSL")
	}
	return nil
}

// load reads the mounted certificate, as the server does when it starts
// or gets to a reload.
func (s *reloadingServer) load(t *testing.T) {
	t.Helper()
	content, err := os.ReadFile(s.files.CertFile())
	if err != nil {
		t.Fatal(err)
	}
	s.loaded = content
}

func (s *reloadingServer) PresentedCertificate(context.Context) ([]byte, error) {
	s.probes++
	if s.down {
		return nil, errors.New("connection refused")
	}
	return pki.LeafCertificate(s.loaded), nil
}

// mountCertificate writes a new server certificate (and its key and
// authority) into dir, as the kubelet updates the Secret, and returns the
// certificate file's content.
func mountCertificate(t *testing.T, dir string) string {
	t.Helper()
	authority, err := pki.NewAuthority("root", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	server, err := pki.IssueServer(authority, []string{"db-0"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	chain := append(append([]byte{}, server.CertPEM...), authority.CertPEM...)
	for name, content := range map[string][]byte{layout.KeyTLSCert: chain, layout.KeyTLSKey: server.KeyPEM, layout.KeyCACert: authority.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return string(chain)
}

func TestServedCertificateIsTheOneTheEnginePresents(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	server := &reloadingServer{files: TLS{Dir: t.TempDir()}}
	first := mountCertificate(t, server.files.Dir)
	now := time.Unix(1_700_000_000, 0)
	var c engineCertificate
	served := func() string {
		if c.served == nil {
			return "none"
		}
		return layout.FileDigest([]byte(*c.served))[:8]
	}
	digest := func(content string) string { return layout.FileDigest([]byte(content))[:8] }

	c.starting(server, now)
	if c.served != nil {
		t.Fatal("a certificate is served before the engine has presented it")
	}
	server.load(t)
	if !c.follow(ctx, server, now.Add(2*time.Second), log) || served() != digest(first) {
		t.Fatalf("after the engine presented the mounted certificate, %s is served, want %s", served(), digest(first))
	}
	if c.follow(ctx, server, now.Add(4*time.Second), log) || server.reloads != 0 {
		t.Fatalf("nothing changed, yet served changed or the engine reloaded (%d times)", server.reloads)
	}

	// Renewed: the engine is asked to load it, and reloads later.
	second := mountCertificate(t, server.files.Dir)
	if c.follow(ctx, server, now.Add(6*time.Second), log) || served() != digest(first) || server.reloads != 1 {
		t.Fatalf("asked to reload (%d reloads), the engine still presents the first certificate, yet %s is served", server.reloads, served())
	}
	server.load(t)
	if !c.follow(ctx, server, now.Add(8*time.Second), log) || served() != digest(second) {
		t.Fatalf("after the engine loaded the renewal, %s is served, want %s", served(), digest(second))
	}

	// Renewed again, and the engine keeps the former certificate: it is
	// asked again, less and less often, and asked which one it serves
	// less and less often, the former one reported served meanwhile.
	third := mountCertificate(t, server.files.Dir)
	at := now.Add(10 * time.Second)
	server.probes = 0
	for step := range 30 {
		c.follow(ctx, server, at.Add(time.Duration(2*step)*time.Second), log)
		if served() != digest(second) {
			t.Fatalf("%d s after the refused reload, %s is served, want the former %s", 2*step, served(), digest(second))
		}
	}
	// Asked to load it at 0, 10 and 30 s; asked what it serves at most
	// at every third poll.
	if server.reloads != 1+3 || server.probes > 10 {
		t.Errorf("in 58 s and 30 polls, the engine was asked %d times to load the certificate it refuses, want 3, and %d times what it serves, want at most 10", server.reloads-1, server.probes)
	}
	// It is asked what it serves next by when it is asked to load it
	// again, 40 s after the last time.
	server.load(t)
	if !c.follow(ctx, server, at.Add(70*time.Second), log) || served() != digest(third) {
		t.Fatalf("once the engine loaded it, %s is served, want %s", served(), digest(third))
	}

	// A reload the engine refuses is asked again as one it ignored.
	fourth := mountCertificate(t, server.files.Dir)
	server.refuse, server.reloads = true, 0
	at = at.Add(100 * time.Second)
	for step := range 30 {
		c.follow(ctx, server, at.Add(time.Duration(2*step)*time.Second), log)
		if served() != digest(third) {
			t.Fatalf("%d s after the refused reload, %s is served, want the former %s", 2*step, served(), digest(third))
		}
	}
	if server.reloads != 3 {
		t.Errorf("in 58 s and 30 polls, a reload the engine refuses was asked %d times, want 3", server.reloads)
	}
	server.refuse = false
	at = at.Add(2 * time.Minute)
	c.follow(ctx, server, at, log)
	server.load(t)
	if !c.follow(ctx, server, at.Add(2*time.Second), log) || served() != digest(fourth) {
		t.Fatalf("once the engine took it, %s is served, want %s", served(), digest(fourth))
	}

	// An engine that does not answer, or presents neither, serves
	// nothing known; what it served before once it presents that again.
	fifth := mountCertificate(t, server.files.Dir)
	server.down = true
	at = at.Add(4 * time.Second)
	if !c.follow(ctx, server, at, log) || c.served != nil {
		t.Fatalf("an engine that does not answer is reported to serve %s", served())
	}
	server.down = false
	server.loaded = []byte(mountCertificate(t, t.TempDir()))
	if c.follow(ctx, server, at.Add(2*time.Second), log) || c.served != nil {
		t.Fatalf("an engine that presents another certificate is reported to serve %s", served())
	}
	server.loaded = []byte(fourth)
	if !c.follow(ctx, server, at.Add(6*time.Second), log) || served() != digest(fourth) {
		t.Fatalf("an engine that presents its former certificate again is reported to serve %s, want %s", served(), digest(fourth))
	}
	server.load(t)
	if !c.follow(ctx, server, at.Add(10*time.Second), log) || served() != digest(fifth) {
		t.Fatalf("once the engine took it, %s is served, want %s", served(), digest(fifth))
	}
}

// presentlessServer cannot be asked which certificate it serves: its
// PresentedCertificate, of another signature, hides the embedded one.
type presentlessServer struct{ reloadingServer }

func (s *presentlessServer) PresentedCertificate() {}

func TestServedCertificateOfAnEngineThatCannotBeAskedIsTheOneItWasAskedToLoad(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	server := &presentlessServer{reloadingServer{files: TLS{Dir: t.TempDir()}}}
	first := mountCertificate(t, server.files.Dir)
	var c engineCertificate
	c.starting(server, time.Now())
	if c.served == nil || *c.served != first {
		t.Fatal("the certificate read at the start is not served")
	}
	second := mountCertificate(t, server.files.Dir)
	if !c.follow(context.Background(), server, time.Now(), log) || *c.served != second || server.reloads != 1 {
		t.Fatalf("after a reload (%d), the renewed certificate is not served", server.reloads)
	}
}

// recordingServer is a reloadingServer that notes when it was asked to
// reload, by the clock of the test.
type recordingServer struct {
	reloadingServer
	now     *time.Time
	reloads []time.Time
}

func (s *recordingServer) ReloadTLS(context.Context) error {
	s.reloads = append(s.reloads, *s.now)
	return nil
}

func TestAnEngineThatKeepsAnotherCertificateIsAskedAgainAtMostEveryFiveMinutes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	start := time.Unix(1_700_000_000, 0)
	now := start
	server := &recordingServer{reloadingServer: reloadingServer{files: TLS{Dir: t.TempDir()}}, now: &now}
	mountCertificate(t, server.files.Dir)
	var c engineCertificate
	c.starting(server, now)
	server.load(t)
	mountCertificate(t, server.files.Dir)
	for ; now.Sub(start) < time.Hour; now = now.Add(2 * time.Second) {
		c.follow(context.Background(), server, now, log)
	}
	var gaps []time.Duration
	for i := 1; i < len(server.reloads); i++ {
		gaps = append(gaps, server.reloads[i].Sub(server.reloads[i-1]))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second}
	if len(gaps) < len(want)+8 {
		t.Fatalf("asked again %d times in an hour (gaps %v), want the gaps %v then every 5 minutes", len(gaps), gaps, want)
	}
	for i, gap := range gaps {
		expected := backOffAtMost
		if i < len(want) {
			expected = want[i]
		}
		if gap < expected || gap > expected+2*time.Second {
			t.Errorf("gap %d between asking again is %s, want %s (a poll every 2 s): %v", i, gap, expected, gaps)
		}
	}
	if server.probes > 3*len(server.reloads)+10 {
		t.Errorf("asked %d times what it serves for %d reloads in an hour", server.probes, len(server.reloads))
	}
}

func TestAnEngineThatDoesNotAnswerIsAskedLessAndLessOften(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	start := time.Unix(1_700_000_000, 0)
	now := start
	server := &recordingServer{reloadingServer: reloadingServer{files: TLS{Dir: t.TempDir()}, down: true}, now: &now}
	mountCertificate(t, server.files.Dir)
	var c engineCertificate
	c.starting(server, now)
	for ; now.Sub(start) < time.Hour; now = now.Add(2 * time.Second) {
		c.follow(context.Background(), server, now, log)
		if c.served != nil {
			t.Fatal("an engine that never answered is reported to serve a certificate")
		}
	}
	// Asked to load it again at 10, 30, 70, 150, 310 s, then every 5
	// minutes: 15 times in an hour; asked what it serves at most twice
	// for each (then, and 2 s after), and a few times more at first.
	if len(server.reloads) != 15 || server.probes > 2*len(server.reloads)+10 {
		t.Errorf("an engine that does not answer for an hour was asked %d times to load the certificate, want 15, and %d times what it serves, want at most %d", len(server.reloads), server.probes, 2*len(server.reloads)+10)
	}
}

// TestClientAuthorityChangeIsReloaded: an engine that started with the
// client authority is asked to reload when it changes, and only then;
// one that started without it is not (it reads it at its next start).
func TestClientAuthorityChangeIsReloaded(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	mountClientAuthority := func(dir string) {
		t.Helper()
		authority, err := pki.NewAuthority("clients", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, layout.KeyClientCACert), authority.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1_700_000_000, 0)

	server := &reloadingServer{files: TLS{Dir: t.TempDir()}}
	mountCertificate(t, server.files.Dir)
	mountClientAuthority(server.files.Dir)
	var c engineCertificate
	c.starting(server, now)
	server.load(t)
	for step := range 3 {
		c.follow(ctx, server, now.Add(time.Duration(2*step)*time.Second), log)
	}
	if server.reloads != 0 {
		t.Fatalf("nothing changed, yet the engine reloaded %d times", server.reloads)
	}
	mountClientAuthority(server.files.Dir)
	c.follow(ctx, server, now.Add(8*time.Second), log)
	c.follow(ctx, server, now.Add(10*time.Second), log)
	if server.reloads != 1 {
		t.Errorf("after the client authority changed, the engine reloaded %d times, want once", server.reloads)
	}

	// A reload the engine refuses is asked again 10 s later, then 20 s
	// after that (not at every poll); once it takes it, a renewed server
	// certificate is served.
	mountClientAuthority(server.files.Dir)
	server.refuse, server.reloads = true, 0
	at := now.Add(20 * time.Second)
	for step := range 15 {
		c.follow(ctx, server, at.Add(time.Duration(2*step)*time.Second), log)
	}
	if server.reloads != 2 {
		t.Errorf("in 28 s, a refused reload of the client authority was asked %d times, want 2 (at 0 and 10 s)", server.reloads)
	}
	server.refuse = false
	renewed := mountCertificate(t, server.files.Dir)
	at = at.Add(40 * time.Second)
	c.follow(ctx, server, at, log)
	server.load(t)
	c.follow(ctx, server, at.Add(2*time.Second), log)
	if c.served == nil || *c.served != renewed {
		t.Error("the renewed server certificate is not served after the client authority was refused")
	}

	// Started before the Secret had a client authority.
	bare := &reloadingServer{files: TLS{Dir: t.TempDir()}}
	mountCertificate(t, bare.files.Dir)
	var b engineCertificate
	b.starting(bare, now)
	bare.load(t)
	mountClientAuthority(bare.files.Dir)
	b.follow(ctx, bare, now.Add(2*time.Second), log)
	if bare.reloads != 0 {
		t.Errorf("an engine that started without the client authority reloaded %d times for it", bare.reloads)
	}
}
