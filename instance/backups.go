package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot/instance/backup"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// Backuper is an engine that takes base backups into a store.
type Backuper interface {
	Backup(ctx context.Context, store objectstore.Store, name, instanceName string) (layout.BackupManifest, error)
}

// WALPruner is an engine whose archived WAL (or binlogs) a removed backup
// may leave unneeded.
type WALPruner interface {
	// WALNotNeeded reports whether the archived file name (archived at
	// archived) is older than anything a restore of the backup m needs.
	WALNotNeeded(name string, archived time.Time, m layout.BackupManifest) bool
}

// backupJobs runs the base backups the operator asks for, one at a time,
// and remembers the recent ones. A backup the program forgot (it restarted)
// is found by its manifest in the store.
type backupJobs struct {
	engine Backuper
	self   string
	target func() (*layout.BackupTarget, error)
	// ctx ends the running backup when the program stops.
	ctx context.Context
	log *slog.Logger

	mu      sync.Mutex
	jobs    map[string]*layout.BackupJob
	order   []string
	running bool
}

// keptJobs bounds how many finished jobs are remembered.
const keptJobs = 32

var backupNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

func (b *backupJobs) open() (objectstore.Store, error) {
	t, err := b.target()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("the Database has no backup destination")
	}
	return backup.Open(*t)
}

// start answers POST layout.BackupsPath: 202 with the new job, 200 with a
// job of that name already known, 409 while another runs.
func (b *backupJobs) start(w http.ResponseWriter, r *http.Request) {
	var req layout.BackupRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !backupNamePattern.MatchString(req.Name) {
		http.Error(w, fmt.Sprintf("backup name %q is not a lowercase DNS name", req.Name), http.StatusBadRequest)
		return
	}
	store, err := b.open()
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	b.mu.Lock()
	if job, ok := b.jobs[req.Name]; ok {
		copied := *job
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, copied)
		return
	}
	if b.running {
		b.mu.Unlock()
		http.Error(w, "another backup is running on this instance", http.StatusConflict)
		return
	}
	job := &layout.BackupJob{Name: req.Name, Phase: layout.BackupRunning}
	b.remember(job)
	b.running = true
	b.mu.Unlock()
	go b.run(store, job)
	writeJSON(w, http.StatusAccepted, *job)
}

func (b *backupJobs) run(store objectstore.Store, job *layout.BackupJob) {
	started := time.Now()
	b.log.Info("base backup started", "backup", job.Name)
	m, err := b.engine.Backup(b.ctx, store, job.Name, b.self)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running = false
	if err != nil {
		job.Phase, job.Error = layout.BackupFailed, err.Error()
		b.log.Error("base backup failed", "backup", job.Name, "error", err.Error())
		return
	}
	job.Phase, job.Manifest = layout.BackupCompleted, &m
	b.log.Info("base backup completed", "backup", job.Name, "seconds", time.Since(started).Seconds(), "bytes", m.Files[0].StoredSize)
}

// remember records a job, forgetting the oldest finished ones beyond
// keptJobs. The caller holds mu.
func (b *backupJobs) remember(job *layout.BackupJob) {
	b.jobs[job.Name] = job
	b.order = append(b.order, job.Name)
	for len(b.order) > keptJobs {
		delete(b.jobs, b.order[0])
		b.order = b.order[1:]
	}
}

// get answers GET layout.BackupsPath/NAME: the job, or a Completed one
// from the manifest in the store, or 404.
func (b *backupJobs) get(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b.mu.Lock()
	job, ok := b.jobs[name]
	var copied layout.BackupJob
	if ok {
		copied = *job
	}
	b.mu.Unlock()
	if ok {
		writeJSON(w, http.StatusOK, copied)
		return
	}
	store, err := b.open()
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	m, err := backup.ReadManifest(r.Context(), store, name)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		http.Error(w, "no backup named "+name, http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
	default:
		writeJSON(w, http.StatusOK, layout.BackupJob{Name: name, Phase: layout.BackupCompleted, Manifest: &m})
	}
}

// remove answers DELETE layout.BackupsPath/NAME: the backup's artifacts go,
// then the archived WAL no remaining backup needs.
func (b *backupJobs) remove(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	store, err := b.open()
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	ctx := r.Context()
	if err := backup.DeleteBackup(ctx, store, name); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	pruned, err := b.pruneWAL(ctx, store)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	b.log.Info("backup deleted", "backup", name, "walFilesPruned", pruned)
	w.WriteHeader(http.StatusNoContent)
}

// pruneWAL removes the archived files older than what the oldest remaining
// backup needs; with no backup left, it keeps them all.
func (b *backupJobs) pruneWAL(ctx context.Context, store objectstore.Store) (int, error) {
	pruner, ok := b.engine.(WALPruner)
	if !ok {
		return 0, nil
	}
	manifests, err := backup.Manifests(ctx, store)
	if err != nil || len(manifests) == 0 {
		return 0, err
	}
	oldest := manifests[0]
	for _, m := range manifests[1:] {
		if m.StartPosition != "" && m.StartTime.Before(oldest.StartTime) {
			oldest = m
		}
	}
	files, err := backup.ArchivedWALFiles(ctx, store)
	if err != nil {
		return 0, err
	}
	pruned := 0
	for _, f := range files {
		if !pruner.WALNotNeeded(f.Key, f.Modified, oldest) {
			continue
		}
		if err := backup.DeleteWAL(ctx, store, f.Key); err != nil {
			return pruned, err
		}
		pruned++
	}
	return pruned, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
