package autopilot

import (
	"math"
	"slices"
	"time"
)

// minRateSamples is how many unsaturated samples a rate scale needs.
const minRateSamples = 8

// estimator reads a sample's load. A CPU measurement is noisy (background
// work, scheduling, a rate window's edges); the engine's query counters are
// exact, and over a window of minutes what a query costs is steady. So
// where a window has fitted the load per query (perWrite, perRead: the
// CPU-based load over the rates, summed over its unsaturated samples), a
// sample's load is its rates times that cost: the CPU's noise is averaged
// over the window instead of read sample by sample. A saturated sample's
// CPU hides load, and its rates may too (a database at its limit serves
// fewer queries): it is read as the larger of the two.
type estimator struct {
	m                 Model
	perWrite, perRead float64
}

// newEstimator fits the load per query over the complete samples of the
// window ending now, outside skip (samples that mix two sizes); without
// enough of them, or without rates, each sample is read from its CPU alone.
func (m Model) newEstimator(history []Sample, now time.Time, window time.Duration, skip span) estimator {
	e := estimator{m: m}
	var load Load
	var writes, reads float64
	n := 0
	for i := len(history) - 1; i >= 0 && now.Sub(history[i].Time) <= window; i-- {
		s := history[i]
		if skip.holds(s.Time) || !complete(s) || saturatedPod(s) {
			continue
		}
		l := m.EstimateLoad(s)
		w, r := sampleRates(s)
		load.Write += l.Write
		load.Read += l.Read
		writes += w
		reads += r
		n++
	}
	if n < minRateSamples {
		return e
	}
	if writes > 0 {
		e.perWrite = load.Write / writes
	}
	if reads > 0 {
		e.perRead = load.Read / reads
	}
	return e
}

// load is the sample's load: from its rates where their cost is known.
func (e estimator) load(s Sample) Load {
	measured := e.m.EstimateLoad(s)
	load := measured
	w, r := sampleRates(s)
	if e.perWrite > 0 {
		load.Write = e.perWrite * w
	}
	if e.perRead > 0 {
		load.Read = e.perRead * r
	}
	if saturatedPod(s) {
		load.Write = math.Max(load.Write, measured.Write)
		load.Read = math.Max(load.Read, measured.Read)
	}
	return load
}

// sampleRates are the Database's write rate (the primary's) and read rate
// (every pod's) in a sample.
func sampleRates(s Sample) (writes, reads float64) {
	for _, p := range s.Pods {
		reads += p.ReadRate
		if p.Primary {
			writes += p.WriteRate
		}
	}
	return writes, reads
}

// minNoiseSteps is how many steps between samples a noise estimate needs.
const minNoiseSteps = 8

// cpuNoise estimates the relative noise of the pods' measured CPU over the
// window ending now: each pod's CPU against what its load read from the
// rates predicts, as a ratio; the steps of that ratio from one sample to the
// next at the same size cancel any steady error of the model and leave the
// noise of two samples; their robust spread (1.4826 median absolute step)
// over √2 is the noise of one. Zero without rates or with too few steps.
func (e estimator) cpuNoise(history []Sample, now time.Time, window time.Duration) float64 {
	if e.perWrite <= 0 && e.perRead <= 0 {
		return 0
	}
	var steps []float64
	var previous []float64
	for i := len(history) - 1; i >= 0 && now.Sub(history[i].Time) <= window; i-- {
		s := history[i]
		ratios := e.cpuRatios(s)
		if ratios != nil && len(ratios) == len(previous) && history[i+1].Replicas == s.Replicas && history[i+1].Tier == s.Tier &&
			history[i+1].Time.Sub(s.Time) <= maxGap {
			for j := range ratios {
				steps = append(steps, math.Abs(ratios[j]-previous[j]))
			}
		}
		previous = ratios
	}
	if len(steps) < minNoiseSteps {
		return 0
	}
	slices.Sort(steps)
	return 1.4826 * steps[len(steps)/2] / math.Sqrt2
}

// cpuRatios are each pod's measured CPU over the CPU its load, read from
// the rates, predicts; nil for a sample that cannot tell (incomplete,
// saturated, or a pod predicted nearly idle).
func (e estimator) cpuRatios(s Sample) []float64 {
	if !complete(s) || saturatedPod(s) {
		return nil
	}
	u := e.m.Predict(e.load(s), s.Replicas, s.Tier)
	cores := cpuCores(s.Tier)
	ratios := make([]float64, 0, len(s.Pods))
	for _, p := range s.Pods {
		predicted := u.Replica
		if p.Primary || s.Replicas <= 1 {
			predicted = u.Primary
		}
		if predicted < 0.05 {
			return nil
		}
		ratios = append(ratios, p.CPUCores/cores/predicted)
	}
	return ratios
}
