package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// Designation is which instance the operator designated the primary, and
// the epoch of that choice.
type Designation struct {
	Primary string
	Epoch   int64
}

// ReadDesignation reads the designation files in dir.
func ReadDesignation(dir string) (Designation, error) {
	primary, err := os.ReadFile(filepath.Join(dir, layout.KeyPrimary))
	if err != nil {
		return Designation{}, fmt.Errorf("reading the designated primary: %w", err)
	}
	d := Designation{Primary: strings.TrimSpace(string(primary))}
	if d.Primary == "" {
		return d, errors.New("the designation names no primary")
	}
	epoch, err := os.ReadFile(filepath.Join(dir, layout.KeyEpoch))
	if err != nil {
		return d, fmt.Errorf("reading the designation's epoch: %w", err)
	}
	if d.Epoch, err = strconv.ParseInt(strings.TrimSpace(string(epoch)), 10, 64); err != nil || d.Epoch < 1 {
		return d, fmt.Errorf("the designation's epoch %q is not a positive number", strings.TrimSpace(string(epoch)))
	}
	return d, nil
}

// knownFile, in the state directory, holds the newest designation the
// instance has learnt of from the operator ("EPOCH PRIMARY"; PRIMARY is
// empty when it only knows that another instance was designated).
const knownFile = "dbpilot-designation"

// KnownDesignation is the newest designation remembered in stateDir; epoch
// 0 when none.
func KnownDesignation(stateDir string) Designation {
	data, err := os.ReadFile(filepath.Join(stateDir, knownFile))
	if err != nil {
		return Designation{}
	}
	epoch, primary, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	d := Designation{Primary: primary}
	d.Epoch, _ = strconv.ParseInt(epoch, 10, 64)
	return d
}

// RememberDesignation keeps d in stateDir when it is newer than the one
// there.
func RememberDesignation(stateDir string, d Designation) error {
	if stateDir == "" || d.Epoch <= KnownDesignation(stateDir).Epoch {
		return nil
	}
	return os.WriteFile(filepath.Join(stateDir, knownFile), []byte(fmt.Sprintf("%d %s", d.Epoch, d.Primary)), 0o600)
}

// ReadCurrentDesignation reads the designation files in dir, unless the
// operator told the instance of a newer one (remembered in stateDir): the
// kubelet updates mounted files a while after the ConfigMap changes, and a
// stale designation must not decide a role.
func ReadCurrentDesignation(dir, stateDir string) (Designation, error) {
	d, err := ReadDesignation(dir)
	if err != nil {
		return d, err
	}
	if known := KnownDesignation(stateDir); known.Epoch > d.Epoch {
		return known, nil
	}
	return d, nil
}

// Membership is how the instance takes part in its Database: its name, where
// the designation is mounted, and the token the operator's requests carry.
type Membership struct {
	// Self is this instance's name (the pod's).
	Self string
	// DesignationDir holds the designation files; empty: the instance has
	// no designation to follow (it runs on its own).
	DesignationDir string
	// StateDir keeps the newest designation the instance learnt of from
	// the operator across restarts of its container (the pod's run
	// directory).
	StateDir string
	// Token authenticates the operator's requests (the replication
	// password); empty refuses them all.
	Token func() string
}

// Promoter is an engine whose replica can become the primary.
type Promoter interface {
	// Promote makes the running replica the primary, once it has applied
	// everything it received.
	Promote(ctx context.Context, req layout.PromoteRequest) error
}

// Demoter is an engine whose primary can become a replica of the
// designated primary.
type Demoter interface {
	// Demote stops the running primary with stop, after fencing it from
	// writes where the engine can, turns its data into a replica's that
	// follows the designated primary on the next start, and returns where
	// the data ends.
	Demote(ctx context.Context, stop func() error) (position string, err error)
}

// designationCheckInterval is how often a running primary reads its
// designation.
const designationCheckInterval = 2 * time.Second

// demotion is a request to demote the running primary; the outcome goes to
// done.
type demotion struct {
	why  string
	done chan demoted
}

type demoted struct {
	position string
	err      error
}

// watchDesignation asks for a demotion when the designation names another
// instance while this one reports itself the primary: the operator chose a
// new primary while this one was away, and it must not take writes.
func watchDesignation(ctx context.Context, m Membership, engine Engine, demote chan<- demotion) {
	reporter, ok := engine.(StatusReporter)
	if !ok || m.DesignationDir == "" {
		return
	}
	ticker := time.NewTicker(designationCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		// Stale files (the operator promoted this instance at a newer
		// epoch than they show) decide nothing.
		d, err := ReadCurrentDesignation(m.DesignationDir, m.StateDir)
		if err != nil || d.Primary == m.Self {
			continue
		}
		check, cancel := context.WithTimeout(ctx, designationCheckInterval)
		status, err := reporter.Status(check)
		cancel()
		if err != nil || status.Role != layout.RolePrimary {
			continue
		}
		req := demotion{why: fmt.Sprintf("the designation (epoch %d) names %s the primary", d.Epoch, d.Primary), done: make(chan demoted, 1)}
		select {
		case demote <- req:
		case <-ctx.Done():
		}
		return
	}
}

// promoteHandler serves layout.PromotePath, calling promoted once the
// engine is promoted.
func promoteHandler(promoter Promoter, stateDir, self string, promoted func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req layout.PromoteRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, "the body is not a PromoteRequest", http.StatusBadRequest)
			return
		}
		if err := RememberDesignation(stateDir, Designation{Epoch: req.Epoch, Primary: self}); err != nil {
			http.Error(w, "remembering the designation failed", http.StatusInternalServerError)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		if err := promoter.Promote(ctx, req); err != nil {
			http.Error(w, "promotion failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		promoted()
		_, _ = w.Write([]byte("promoted\n"))
	})
}

// demoteHandler serves layout.DemotePath: it hands the request to the
// supervisor and answers once the engine has stopped.
func demoteHandler(demote chan<- demotion, stateDir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body layout.DemoteRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
			http.Error(w, "the body is not a DemoteRequest", http.StatusBadRequest)
			return
		}
		// The next start follows this designation, not stale files
		// that may still name this instance.
		if err := RememberDesignation(stateDir, Designation{Epoch: body.Epoch}); err != nil {
			http.Error(w, "remembering the designation failed", http.StatusInternalServerError)
			return
		}
		req := demotion{why: fmt.Sprintf("the operator asked (epoch %d)", body.Epoch), done: make(chan demoted, 1)}
		select {
		case demote <- req:
		case <-r.Context().Done():
			return
		}
		select {
		case out := <-req.done:
			if out.err != nil {
				http.Error(w, "demotion failed: "+out.err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(layout.DemoteResponse{Position: out.position})
		case <-r.Context().Done():
		}
	})
}
