package autopilot

import (
	"math"
	"time"
)

const (
	// minLearnSamples is how many usable samples a fit needs.
	minLearnSamples = 8
	// maxShareError is the standard error above which a fitted replay share
	// is not trusted.
	maxShareError = 0.05
	// minConditioning bounds how close to singular the fit's normal
	// equations may be (their determinant after scaling to unit diagonal):
	// when writes and reads always come in the same proportion on every
	// pod, their costs cannot be told apart.
	minConditioning = 1e-6
	// learnSettle is how long a size must have run before its samples are
	// fitted: CPU is averaged over a rate window and read a scrape late, so
	// samples just after a change mix two sizes.
	learnSettle = 2 * time.Minute
	// MaxReplayShare is the most of a write's cost a replica is taken to
	// pay replaying it. A fit above it is clamped: replicas that pay nearly
	// as much as the primary leave the primary's excess, from which the
	// write load is estimated, too small to measure.
	MaxReplayShare = 0.8
)

// LearnModel fits the replay share to the Database's history. In every
// complete sample with replicas and no saturated pod, the primary's CPU, in
// capacity units, is a·writes + b·reads of its own rates, and each
// replica's is x·writes + b·reads of its rates (once the size has run for
// learnSettle), where a is the cost of executing a write, b of serving a
// read and x of replaying a write; the share is x/a, at most
// MaxReplayShare. The fit is least squares over every pod of every usable
// sample. The per-pod read rates tell reads from writes once the mix or the
// number of pods has changed; until then, or when the fit is too uncertain,
// the model is Assumed.
func LearnModel(history []Sample) Model {
	var xtx [3][3]float64
	var xty [3]float64
	var yy float64
	rows, samples := 0, 0
	var since time.Time
	for i, s := range history {
		if i == 0 || s.Replicas != history[i-1].Replicas || s.Tier != history[i-1].Tier {
			since = s.Time
		}
		if saturatedPod(s) {
			// A saturated pod's CPU is capped, and so is every sample
			// whose rate window reaches back to it.
			since = s.Time
		}
		if s.Time.Sub(since) < learnSettle || !complete(s) || s.Replicas < 2 {
			continue
		}
		c, cores := Capacity(s.Tier), cpuCores(s.Tier)
		var writes float64
		for _, p := range s.Pods {
			if p.Primary {
				writes = p.WriteRate
			}
		}
		for _, p := range s.Pods {
			x := [3]float64{0, p.ReadRate, writes}
			if p.Primary {
				x = [3]float64{writes, p.ReadRate, 0}
			}
			y := p.CPUCores / cores * c
			for i := range 3 {
				for j := range 3 {
					xtx[i][j] += x[i] * x[j]
				}
				xty[i] += x[i] * y
			}
			yy += y * y
			rows++
		}
		samples++
	}
	if samples < minLearnSamples || rows <= 3 {
		return Assumed
	}
	// Scale to unit diagonal: the determinant then measures how well the
	// three costs can be told apart, whatever the rates' units.
	var scale [3]float64
	for i := range 3 {
		if xtx[i][i] <= 0 {
			return Assumed
		}
		scale[i] = 1 / math.Sqrt(xtx[i][i])
	}
	var scaled [3][3]float64
	for i := range 3 {
		for j := range 3 {
			scaled[i][j] = xtx[i][j] * scale[i] * scale[j]
		}
	}
	det := det3(scaled)
	if !(det >= minConditioning) { // also NaN
		return Assumed
	}
	inv := inverse3(scaled, det)
	var beta [3]float64
	for i := range 3 {
		for j := range 3 {
			beta[i] += inv[i][j] * scale[j] * xty[j]
		}
		beta[i] *= scale[i]
	}
	a, x := beta[0], beta[2]
	if a <= 0 {
		return Assumed
	}
	// Residual variance, then the standard error of x/a by the delta method.
	rss := yy
	for i := range 3 {
		rss -= beta[i] * xty[i]
	}
	variance := math.Max(0, rss) / float64(rows-3)
	cov := func(i, j int) float64 { return variance * inv[i][j] * scale[i] * scale[j] }
	share := x / a
	shareVariance := (cov(2, 2) - 2*share*cov(0, 2) + share*share*cov(0, 0)) / (a * a)
	if !(math.Sqrt(math.Max(0, shareVariance)) <= maxShareError) || math.IsNaN(share) { // also NaN
		return Assumed
	}
	return Model{ReplayShare: clampedShare(share)}
}

// clampedShare is share within 0 and MaxReplayShare.
func clampedShare(share float64) float64 {
	return math.Max(0, math.Min(MaxReplayShare, share))
}

// saturatedPod reports whether a pod of the sample runs at its CPU limit,
// where its CPU no longer shows what it is asked for.
func saturatedPod(s Sample) bool {
	cores := cpuCores(s.Tier)
	for _, p := range s.Pods {
		if p.CPUCores/cores >= saturated {
			return true
		}
	}
	return false
}

func det3(m [3][3]float64) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}

// inverse3 inverts m, whose determinant is det, by its adjugate.
func inverse3(m [3][3]float64, det float64) [3][3]float64 {
	var inv [3][3]float64
	for i := range 3 {
		for j := range 3 {
			// The cofactor of m[j][i], over the determinant.
			r0, r1 := (j+1)%3, (j+2)%3
			c0, c1 := (i+1)%3, (i+2)%3
			inv[i][j] = (m[r0][c0]*m[r1][c1] - m[r0][c1]*m[r1][c0]) / det
		}
	}
	return inv
}
