package controllers

import (
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// failureGrace is how long reconcile errors must go on before the Database
// is reported Degraded: a transient API error (a timeout, a restarting API
// server) is retried with backoff and usually gone by then.
const failureGrace = 2 * time.Minute

// failures remembers, per Database, since when its passes have failed.
type failures struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// degrading returns the error a pass ended with when it should show as
// Degraded: at once for an error only the user can fix (a terminal error),
// never for a write conflict (the next pass reads the newer object), and
// for any other error once the passes have failed for failureGrace. A pass
// without error clears the record.
func (f *failures) degrading(key types.NamespacedName, err error, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.since, key)
		return nil
	}
	if errors.Is(err, reconcile.TerminalError(nil)) {
		return err
	}
	if onlyConflicts(err) {
		return nil
	}
	if f.since == nil {
		f.since = map[types.NamespacedName]time.Time{}
	}
	first, ok := f.since[key]
	if !ok {
		f.since[key] = now
		first = now
	}
	if now.Sub(first) < failureGrace {
		return nil
	}
	return err
}

// forget drops a deleted Database's record.
func (f *failures) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.since, key)
}

// onlyConflicts reports whether every error joined in err is a conflict.
func onlyConflicts(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyConflicts(e) {
				return false
			}
		}
		return true
	}
	return apierrors.IsConflict(err)
}
