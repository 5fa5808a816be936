// Package sim replays load traces through the auto-pilot's decision engine
// and through a baseline that implements the Kubernetes HPA algorithm, on the
// same simulated database, and compares overload, cost and flapping. See
// README.md for the simulated world.
package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot/autopilot"
)

// Step is one row of a trace: from Seconds on, the demand is Reads and Writes
// capacity units. A row whose reads and writes are empty is a metrics gap:
// the demand goes on unchanged but no metrics are collected.
type Step struct {
	Seconds       float64
	Reads, Writes float64
	Gap           bool
}

// Trace is a named load over time.
type Trace struct {
	Name  string
	Steps []Step
}

// ReadTrace parses a CSV trace with the header seconds,reads,writes.
func ReadTrace(name string, r io.Reader) (Trace, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return Trace{}, fmt.Errorf("trace %s: %w", name, err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != "seconds,reads,writes" {
		return Trace{}, fmt.Errorf("trace %s: want a header seconds,reads,writes and at least one row", name)
	}
	trace := Trace{Name: name}
	var last Step
	for i, row := range rows[1:] {
		if len(row) != 3 {
			return Trace{}, fmt.Errorf("trace %s line %d: want 3 fields, got %d", name, i+2, len(row))
		}
		seconds, err := strconv.ParseFloat(row[0], 64)
		if err != nil || seconds < 0 || (i > 0 && seconds <= last.Seconds) {
			return Trace{}, fmt.Errorf("trace %s line %d: seconds %q must be a number larger than the previous row's", name, i+2, row[0])
		}
		step := Step{Seconds: seconds, Reads: last.Reads, Writes: last.Writes}
		if row[1] == "" && row[2] == "" {
			step.Gap = true
		} else {
			if step.Reads, err = parseDemand(row[1]); err != nil {
				return Trace{}, fmt.Errorf("trace %s line %d: reads: %w", name, i+2, err)
			}
			if step.Writes, err = parseDemand(row[2]); err != nil {
				return Trace{}, fmt.Errorf("trace %s line %d: writes: %w", name, i+2, err)
			}
		}
		trace.Steps = append(trace.Steps, step)
		last = step
	}
	return trace, nil
}

func parseDemand(field string) (float64, error) {
	v, err := strconv.ParseFloat(field, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a non-negative number", field)
	}
	return v, nil
}

// ReadTraceFile reads a trace from a CSV file, named after the file.
func ReadTraceFile(path string) (Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return Trace{}, err
	}
	defer f.Close()
	return ReadTrace(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), f)
}

// ReadSuite reads every *.csv trace in dir, in name order.
func ReadSuite(dir string) ([]Trace, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var traces []Trace
	for _, path := range paths {
		trace, err := ReadTraceFile(path)
		if err != nil {
			return nil, err
		}
		traces = append(traces, trace)
	}
	return traces, nil
}

// Duration is the time of the last row.
func (t Trace) Duration() float64 {
	if len(t.Steps) == 0 {
		return 0
	}
	return t.Steps[len(t.Steps)-1].Seconds
}

// At returns the demand at time s and whether metrics are missing then.
func (t Trace) At(s float64) (autopilot.Load, bool) {
	i := sort.Search(len(t.Steps), func(i int) bool { return t.Steps[i].Seconds > s }) - 1
	if i < 0 {
		i = 0
	}
	step := t.Steps[i]
	return autopilot.Load{Read: step.Reads, Write: step.Writes}, step.Gap
}
