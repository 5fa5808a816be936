package autopilot

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// newest returns the last sample of the history.
func newest(history []Sample) (Sample, bool) {
	if len(history) == 0 {
		return Sample{}, false
	}
	return history[len(history)-1], true
}

// complete reports whether a sample covers every pod the Database ran, with
// numbers that make sense: a negative, infinite or NaN metric makes the
// whole sample unusable.
func complete(s Sample) bool {
	return s.Replicas > 0 && len(s.Pods) >= int(s.Replicas) && hasPrimary(s) && sane(s)
}

func sane(s Sample) bool {
	for _, p := range s.Pods {
		for _, v := range []float64{p.CPUCores, p.MemoryBytes, p.Connections, p.MaxConnections, p.ReadRate, p.WriteRate, p.LagSeconds, p.VolumeUsedBytes, p.VolumeCapacityBytes} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

func hasPrimary(s Sample) bool {
	for _, p := range s.Pods {
		if p.Primary {
			return true
		}
	}
	return false
}

// loadTrend fits a line through the load of the complete samples of the last
// trendWindow outside skip, and returns its slope per second; zero when the
// rise over the window is not significant or under minRise of the mean. It
// is not known (false) with too few samples over too short a time.
func (e estimator) loadTrend(history []Sample, now time.Time, skip span, minRise float64) (Load, bool) {
	var ts, ws, rs []float64
	for _, s := range history {
		if now.Sub(s.Time) > trendWindow || skip.holds(s.Time) || !complete(s) {
			continue
		}
		load := e.load(s)
		ts = append(ts, s.Time.Sub(now).Seconds())
		ws = append(ws, load.Write)
		rs = append(rs, load.Read)
	}
	// A trend needs enough points over enough time to mean anything.
	if len(ts) < 8 || ts[len(ts)-1]-ts[0] < trendWindow.Seconds()/2 {
		return Load{}, false
	}
	// A sustained trend rises in both halves of the window; a step (one
	// jump, then flat) rises in one half only and is not extrapolated.
	half := len(ts) / 2
	span := ts[len(ts)-1] - ts[0]
	trend := Load{
		Write: sustainedSlope(ts, ws, half),
		Read:  sustainedSlope(ts, rs, half),
	}
	if trend.Write*span < minRise*mean(ws) || !significantRise(ts, ws) {
		trend.Write = 0
	}
	if trend.Read*span < minRise*mean(rs) || !significantRise(ts, rs) {
		trend.Read = 0
	}
	return trend, true
}

// minTrendSignificance is how many standard errors the slope fitted over
// the whole window must lie above zero for a rise to count: load estimated
// from noisy CPU rises in both halves of a window often enough by chance.
const minTrendSignificance = 3.0

// significantRise reports whether the least-squares slope of y over x lies
// minTrendSignificance standard errors above zero.
func significantRise(x, y []float64) bool {
	n := float64(len(x))
	if n < 3 {
		return false
	}
	b := slope(x, y)
	mx, my := mean(x), mean(y)
	var sxx, rss float64
	for i := range x {
		dx, r := x[i]-mx, y[i]-my-b*(x[i]-mx)
		sxx += dx * dx
		rss += r * r
	}
	if sxx == 0 {
		return false
	}
	se := math.Sqrt(rss / (n - 2) / sxx)
	return b > minTrendSignificance*se
}

// span is the time from From up to To; a zero From is the beginning of time.
type span struct{ From, To time.Time }

func (s span) holds(t time.Time) bool {
	return !t.Before(s.From) && t.Before(s.To)
}

// sustainedSlope is the smaller of the slopes of the two halves when both
// rise, else zero.
func sustainedSlope(x, y []float64, half int) float64 {
	first, second := slope(x[:half], y[:half]), slope(x[half:], y[half:])
	if first <= 0 || second <= 0 {
		return 0
	}
	return math.Min(first, second)
}

// minTrendRise is the relative rise over the fitted span below which a
// trend does not call for a scale-up.
const minTrendRise = 0.1

func mean(values []float64) float64 {
	var sum float64
	for _, v := range values {
		sum += v
	}
	return sum / float64(max(1, len(values)))
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// breachStart returns when the current run of samples above target began:
// the time of the oldest sample in an unbroken run of breaches ending with
// the newest. Each sample is judged at the size it ran, with the trend's
// projection added.
func (m Model) breachStart(in Input, trend Load, upTarget float64) time.Time {
	start := in.Now
	for i := len(in.History) - 1; i >= 0; i-- {
		s := in.History[i]
		if !complete(s) || (i < len(in.History)-1 && in.History[i+1].Time.Sub(s.Time) > maxGap) {
			break
		}
		load := m.EstimateLoad(s)
		ahead := leadAhead(load, trend)
		memory, connections, _ := pressures(s)
		size := Size{Replicas: s.Replicas, Tier: s.Tier}
		if m.fits(ahead, size, upTarget) && memory <= in.Policy.MemoryTarget && connections <= in.Policy.ConnectionTarget {
			break
		}
		start = s.Time
	}
	return start
}

// windowPeak returns the highest write and read load over the window ending
// now, and whether the window is covered by complete samples without gaps.
// A scale-down is never decided on partial data. The samples taken while the
// last change settled (skip) are left out of the peak: they mix two sizes
// (CPU averaged over a rate window that spans the change, read against the
// new size), and would read as load the Database never had.
func (e estimator) windowPeak(history []Sample, now time.Time, window time.Duration, skip span) (Load, bool) {
	var peak Load
	covered := false
	for i := len(history) - 1; i >= 0; i-- {
		s := history[i]
		if !complete(s) {
			return peak, false
		}
		if i < len(history)-1 && history[i+1].Time.Sub(s.Time) > maxGap {
			return peak, false
		}
		if now.Sub(s.Time) >= window {
			covered = true
		}
		if skip.holds(s.Time) {
			if covered {
				break
			}
			continue
		}
		load := e.load(s)
		peak.Write = math.Max(peak.Write, load.Write)
		peak.Read = math.Max(peak.Read, load.Read)
		// The most reads on replicas alone: the fewest replicas fit it.
		peak.ReplicaOnly = math.Max(peak.ReplicaOnly, load.ReplicaOnly)
		if covered {
			break
		}
	}
	return peak, covered
}

// pressures returns the highest memory, connection and volume utilization
// over the pods of a sample.
func pressures(s Sample) (memory, connections, volume float64) {
	size, ok := s.Tier.Size()
	memoryLimit := 1.0
	if ok {
		memoryLimit = size.Memory.AsApproximateFloat64()
	}
	for _, p := range s.Pods {
		memory = math.Max(memory, p.MemoryBytes/memoryLimit)
		if p.MaxConnections > 0 {
			connections = math.Max(connections, p.Connections/p.MaxConnections)
		}
		if p.VolumeCapacityBytes > 0 {
			volume = math.Max(volume, p.VolumeUsedBytes/p.VolumeCapacityBytes)
		}
	}
	return memory, connections, volume
}

// Anomaly detection: a robust baseline (median and median absolute
// deviation) of throughput and connections over the history; the newest
// sample is anomalous when it lies more than anomalyDeviations scaled MADs
// away. It needs anomalyMinSamples of history.
const (
	anomalyDeviations = 6.0
	anomalyMinSamples = 40
)

func detectAnomalies(history []Sample) []string {
	if len(history) < anomalyMinSamples+1 {
		return nil
	}
	var throughput, connections []float64
	for _, s := range history {
		var ops, conns float64
		for _, p := range s.Pods {
			ops += p.ReadRate + p.WriteRate
			conns += p.Connections
		}
		throughput = append(throughput, ops)
		connections = append(connections, conns)
	}
	var anomalies []string
	for _, series := range []struct {
		name   string
		values []float64
	}{{"throughput", throughput}, {"connections", connections}} {
		base := series.values[:len(series.values)-1]
		last := series.values[len(series.values)-1]
		median, mad := medianMAD(base)
		spread := math.Max(1.4826*mad, math.Max(0.05*math.Abs(median), 1e-9))
		if dev := (last - median) / spread; math.Abs(dev) > anomalyDeviations {
			anomalies = append(anomalies, fmt.Sprintf("%s %.1f is %.0f deviations from its baseline %.1f", series.name, last, dev, median))
		}
	}
	return anomalies
}

func medianMAD(values []float64) (float64, float64) {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	deviations := make([]float64, len(sorted))
	for i, v := range sorted {
		deviations[i] = math.Abs(v - median)
	}
	slices.Sort(deviations)
	return median, deviations[len(deviations)/2]
}
