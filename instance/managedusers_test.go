package instance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// keeperEngine counts what the instance asks of its users and answers
// as told.
type keeperEngine struct {
	idleEngine
	calls   int
	primary bool
	err     error
	refused map[string]error
	asked   string
	users   []layout.ManagedUser
}

func (e *keeperEngine) EnsureManagedUsers(_ context.Context, application string, users []layout.ManagedUser) (bool, map[string]error, error) {
	e.calls++
	e.asked, e.users = application, users
	return e.primary, e.refused, e.err
}

func TestManagedUsersFollow(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const one = `[{"name":"report","access":"ReadOnly","password":"p"}]`
	const two = `[{"name":"report","access":"ReadWrite","password":"p"}]`
	start := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	at := func(seconds int) time.Time { return start.Add(time.Duration(seconds) * time.Second) }

	t.Run("no file, no call", func(t *testing.T) {
		e := &keeperEngine{primary: true}
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users")}
		m.follow(ctx, e, "app", at(0), log)
		if e.calls != 0 {
			t.Errorf("%d calls without users", e.calls)
		}
	})
	t.Run("a primary applies once per change", func(t *testing.T) {
		e := &keeperEngine{primary: true}
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users")}
		write(t, m.file, one)
		for s := 0; s < 60; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if e.calls != 1 || e.asked != "app" {
			t.Errorf("%d calls (asked for %q), want 1 for app", e.calls, e.asked)
		}
		write(t, m.file, two)
		m.follow(ctx, e, "app", at(62), log)
		if e.calls != 2 {
			t.Errorf("%d calls after a change, want 2", e.calls)
		}
	})
	t.Run("a user is locked at its validUntil, and reported so", func(t *testing.T) {
		e := &keeperEngine{primary: true}
		var published atomic.Pointer[keptUsers]
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users"), published: &published}
		write(t, m.file, `[{"name":"report","access":"ReadOnly","password":"p","validUntil":"`+at(10).Format(time.RFC3339)+`"}]`)
		for s := 0; s < 10; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if e.calls != 1 || e.users[0].Locked || e.users[0].Password != "p" {
			t.Errorf("before validUntil: %d calls, last with %+v; want 1, the user as written", e.calls, e.users)
		}
		m.follow(ctx, e, "app", at(10), log)
		locked := layout.ManagedUser{Name: "report", Locked: true}
		if e.calls != 2 || e.users[0] != locked {
			t.Errorf("at validUntil: %d calls, last with %+v; want 2, the user locked", e.calls, e.users)
		}
		if report := published.Load().report("k"); len(report) != 1 || report[0].Entry != layout.ManagedUserDigest("k", locked) {
			t.Errorf("the report names %+v, not the locked entry", report)
		}
		for s := 12; s < 60; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if e.calls != 2 {
			t.Errorf("%d calls after validUntil, want no more than 2", e.calls)
		}
	})
	t.Run("a failure is retried with a backoff", func(t *testing.T) {
		e := &keeperEngine{primary: true, err: errors.New("refused")}
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users")}
		write(t, m.file, one)
		for s := 0; s <= 120; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		// At 0, 4, 12, 28, 58, 88, 118: the wait doubles from 4 s to 30 s.
		if e.calls != 7 {
			t.Errorf("%d calls in two minutes of failures, want 7", e.calls)
		}
		e.err = nil
		write(t, m.file, two)
		m.follow(ctx, e, "app", at(122), log)
		if e.calls != 8 || m.applied == nil {
			t.Errorf("a change is tried at once: %d calls, applied %v", e.calls, m.applied)
		}
	})
	t.Run("a replica is asked often after a change, then seldom", func(t *testing.T) {
		e := &keeperEngine{primary: false}
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users")}
		write(t, m.file, one)
		for s := 0; s < 30; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if e.calls != 15 {
			t.Errorf("%d calls in the 30 s after a change, want every poll (15)", e.calls)
		}
		for s := 30; s < 150; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if e.calls != 15+4 {
			t.Errorf("%d calls, want 4 more in the next two minutes", e.calls)
		}
		e.primary = true
		for s := 150; s < 182; s += 2 {
			m.follow(ctx, e, "app", at(s), log)
		}
		if m.applied == nil {
			t.Error("promoted, it never kept the users")
		}
	})
	t.Run("a primary reports what it kept and what was refused", func(t *testing.T) {
		e := &keeperEngine{primary: true, refused: map[string]error{"etl": errors.New("letting etl write: permission denied")}}
		var published atomic.Pointer[keptUsers]
		m := &managedUsers{file: filepath.Join(t.TempDir(), "users"), published: &published}
		write(t, m.file, `[{"name":"report","access":"ReadOnly","password":"p"},{"name":"etl","access":"ReadWrite","password":"q"}]`)
		m.follow(ctx, e, "app", at(0), log)
		reports := published.Load().report("key")
		want := []layout.ManagedUserReport{
			{Name: "etl", Entry: layout.ManagedUserDigest("key", layout.ManagedUser{Name: "etl", Access: layout.AccessReadWrite, Password: "q"}), Refused: "letting etl write: permission denied"},
			{Name: "report", Entry: layout.ManagedUserDigest("key", layout.ManagedUser{Name: "report", Access: layout.AccessReadOnly, Password: "p"})},
		}
		if !slices.Equal(reports, want) {
			t.Errorf("reports %+v, want %+v", reports, want)
		}
		if m.applied != nil {
			t.Error("a refusal counts as applied: it would not be retried")
		}
		m.follow(ctx, e, "app", at(2), log)
		if e.calls != 1 {
			t.Errorf("%d calls at once after a refusal, want a backoff", e.calls)
		}
		e.refused = nil
		m.follow(ctx, e, "app", at(4), log)
		reports = published.Load().report("key")
		if len(reports) != 2 {
			t.Errorf("retried, %d users reported, want 2", len(reports))
		}
		for _, r := range reports {
			if r.Entry == "" || r.Refused != "" {
				t.Errorf("retried without a refusal: %+v", r)
			}
		}
		e.primary = false
		write(t, m.file, one)
		m.follow(ctx, e, "app", at(6), log)
		if r := published.Load().report("key"); r != nil {
			t.Errorf("a replica reports users: %+v", r)
		}
	})
}

func TestManagedUsersAskAPromotedReplicaAtOnce(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &keeperEngine{primary: false}
	var promotions atomic.Int64
	m := &managedUsers{file: filepath.Join(t.TempDir(), "users"), promotions: &promotions}
	if err := os.WriteFile(m.file, []byte(`[{"name":"report","access":"ReadOnly","password":"p"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	m.follow(context.Background(), e, "app", start, log)
	m.follow(context.Background(), e, "app", start.Add(40*time.Second), log)
	calls := e.calls
	// Past the window after the change: the replica is asked every 30 s.
	m.follow(context.Background(), e, "app", start.Add(42*time.Second), log)
	if e.calls != calls {
		t.Fatalf("a replica asked again 2 s later, past its window")
	}
	e.primary = true
	promotions.Add(1)
	m.follow(context.Background(), e, "app", start.Add(44*time.Second), log)
	if e.calls != calls+1 || m.applied == nil {
		t.Errorf("promoted, the instance did not keep the users at once: %d calls, applied %v", e.calls-calls, m.applied)
	}
}

func TestRefuseUserTellsNoSecret(t *testing.T) {
	refused := map[string]error{}
	// A quoted statement is left out, whatever its quoting does to the
	// password; what is left is searched for the secrets.
	RefuseUser(refused, "etl", "updating the user etl", errors.New(`Error 1064: syntax error near 'IDENTIFIED BY 's3''cret' WITH' at line 1`), "s3'cret")
	RefuseUser(refused, "etl", "creating the user etl", errors.New("role verifier *94BB exists"), "s3'cret", "*94BB")
	RefuseUser(refused, "etl", "letting etl read", errors.New("denied"))
	// Redacted before the cut: a password holding "near " is not cut into
	// a piece no longer matched.
	RefuseUser(refused, "etl", "letting etl write", errors.New("password s3near cret refused"), "s3near cret")
	got := refused["etl"].Error()
	if strings.Contains(got, "s3") || strings.Contains(got, "*94BB") {
		t.Errorf("the refusal tells a secret: %s", got)
	}
	for _, want := range []string{"updating the user etl: Error 1064: syntax error [the statement's text left out]", "creating the user etl: role verifier [redacted] exists", "letting etl read: denied", "letting etl write: password [redacted] refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal %q lacks %q", got, want)
		}
	}
}
