package instance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
	asked   string
}

func (e *keeperEngine) EnsureManagedUsers(_ context.Context, application string, _ []layout.ManagedUser) (bool, error) {
	e.calls++
	e.asked = application
	return e.primary, e.err
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
}
