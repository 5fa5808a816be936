package instance

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
)

// fenceFile, in the state directory, keeps a fenced instance's engine
// stopped across restarts of its container until it is unfenced.
const fenceFile = "dbpilot-fenced"

// isFenced reports whether the instance is fenced.
func isFenced(stateDir string) bool {
	if stateDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(stateDir, fenceFile))
	return err == nil
}

// fenceHandler serves layout.FencePath: it marks the instance fenced and,
// when the engine runs, asks the supervisor to stop it and exit, so the
// next start finds the mark and keeps the engine stopped.
func fenceHandler(stateDir string, stopEngine chan<- chan struct{}, running func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stateDir == "" {
			http.Error(w, "this instance has no state directory to keep the fence in", http.StatusConflict)
			return
		}
		if err := os.WriteFile(filepath.Join(stateDir, fenceFile), nil, 0o600); err != nil {
			http.Error(w, "marking the instance fenced failed", http.StatusInternalServerError)
			return
		}
		if running() {
			done := make(chan struct{})
			select {
			case stopEngine <- done:
				<-done
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte("fenced\n"))
	})
}

// unfenceHandler serves layout.UnfencePath: it removes the mark and ends a
// fenced wait, so the next start runs the engine.
func unfenceHandler(stateDir string, unfenced chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		err := os.Remove(filepath.Join(stateDir, fenceFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			http.Error(w, "removing the fence failed", http.StatusInternalServerError)
			return
		}
		select {
		case unfenced <- struct{}{}:
		default:
		}
		_, _ = w.Write([]byte("unfenced\n"))
	})
}
