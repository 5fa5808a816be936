package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// World is what the simulated database is like: how its pods spend CPU and
// how fast metrics and new replicas arrive. The auto-pilot is not told any of
// it; it sees only the metrics. A world file sets it (JSON; every key
// optional, DefaultWorld's value when absent; unknown keys rejected).
type World struct {
	// ReplicaWriteShare is the share of the primary's CPU for a write that
	// each replica spends replaying it.
	ReplicaWriteShare float64 `json:"replicaWriteShare"`
	// CPUNoise is the relative standard deviation of each measured CPU
	// value; Seed seeds it.
	CPUNoise float64 `json:"cpuNoise"`
	Seed     uint64  `json:"seed"`
	// CloneSeconds is how long a new replica takes to serve.
	CloneSeconds float64 `json:"cloneSeconds"`
	// ScrapeSeconds is how old the newest metrics are when read.
	ScrapeSeconds float64 `json:"scrapeSeconds"`
	// RateWindowSeconds is the window CPU rates are averaged over.
	RateWindowSeconds float64 `json:"rateWindowSeconds"`
	// RestartSeconds is how long a restarted pod serves nothing.
	RestartSeconds float64 `json:"restartSeconds"`
	// SwitchoverSeconds is how long writes are unavailable while the
	// primary moves to a replica.
	SwitchoverSeconds float64 `json:"switchoverSeconds"`
	// InPlaceResize: the cluster resizes a running pod's CPU and memory
	// without a restart, ResizeSeconds after it is asked.
	InPlaceResize bool    `json:"inPlaceResize"`
	ResizeSeconds float64 `json:"resizeSeconds"`
	// InPlaceGrowOnly: with InPlaceResize, only a bigger tier resizes the
	// pods in place; a smaller one rolls (PostgreSQL under dbpilot).
	InPlaceGrowOnly bool `json:"inPlaceGrowOnly"`
}

// DefaultWorld is the world of the shipped results: replicas replay writes at
// 30 % of their cost, exact CPU, 2-minute clones, 15 s scrapes, 1-minute
// rate windows, 30 s restarts, 5 s switchovers, no in-place resize.
func DefaultWorld() World {
	return World{
		ReplicaWriteShare: 0.3, CloneSeconds: 120, ScrapeSeconds: 15, RateWindowSeconds: 60,
		RestartSeconds: 30, SwitchoverSeconds: 5, ResizeSeconds: 10,
	}
}

// ReadWorld parses a world file onto DefaultWorld.
func ReadWorld(name string, r io.Reader) (World, error) {
	w := DefaultWorld()
	decoder := json.NewDecoder(r)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&w); err != nil {
		return World{}, fmt.Errorf("world %s: %w", name, err)
	}
	if decoder.More() {
		return World{}, fmt.Errorf("world %s: more than one JSON object", name)
	}
	if err := w.validate(); err != nil {
		return World{}, fmt.Errorf("world %s: %w", name, err)
	}
	return w, nil
}

// ReadWorldFile reads a world file; its name is the file's base name
// without .json.
func ReadWorldFile(path string) (World, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return World{}, "", err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	w, err := ReadWorld(name, bytes.NewReader(data))
	return w, name, err
}

// NamedWorld is a world and the name of its file.
type NamedWorld struct {
	Name  string
	World World
}

// ReadWorlds reads every *.json world file of dir, by name.
func ReadWorlds(dir string) ([]NamedWorld, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []NamedWorld
	for _, path := range paths {
		w, name, err := ReadWorldFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedWorld{Name: name, World: w})
	}
	return out, nil
}

func (w World) validate() error {
	var errs []error
	if w.ReplicaWriteShare < 0 || w.ReplicaWriteShare > 1 {
		errs = append(errs, fmt.Errorf("replicaWriteShare %g: want 0 to 1", w.ReplicaWriteShare))
	}
	if w.CPUNoise < 0 || w.CPUNoise >= 1 {
		errs = append(errs, fmt.Errorf("cpuNoise %g: want at least 0 and less than 1", w.CPUNoise))
	}
	for _, d := range []struct {
		key   string
		value float64
	}{
		{"cloneSeconds", w.CloneSeconds}, {"scrapeSeconds", w.ScrapeSeconds},
		{"restartSeconds", w.RestartSeconds}, {"switchoverSeconds", w.SwitchoverSeconds}, {"resizeSeconds", w.ResizeSeconds},
	} {
		if d.value < 0 {
			errs = append(errs, fmt.Errorf("%s %g: want at least 0", d.key, d.value))
		}
	}
	if w.RateWindowSeconds <= 0 {
		errs = append(errs, fmt.Errorf("rateWindowSeconds %g: want more than 0", w.RateWindowSeconds))
	}
	if w.InPlaceGrowOnly && !w.InPlaceResize {
		errs = append(errs, errors.New("inPlaceGrowOnly: needs inPlaceResize"))
	}
	return errors.Join(errs...)
}
