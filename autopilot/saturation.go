package autopilot

import "time"

// saturatedNoiseDeviations: saturation shortens the wait only when it lies
// at least this many deviations of the CPU's noise above the up target, so
// noise cannot fake it from a pod that runs within target.
const saturatedNoiseDeviations = 2

// scaleUpWait is how long a breach must last before a scale-up: the
// policy's stabilization window, halved for a lone pod saturated in the two
// newest samples. A lone pod's step is the slowest there is (a new pod of
// the next tier clones, then the primary switches over to it), and a pod at
// its limit serves less than it is asked, so every second of waiting is a
// second of lost queries. Two samples, not one, and only where saturation
// is well beyond what the CPU's noise (a relative deviation) could read
// from a pod within target.
func scaleUpWait(in Input, cur Size, upTarget, noise float64) time.Duration {
	wait := in.Policy.ScaleUpStabilization
	n := len(in.History)
	if cur.Replicas != 1 || n < 2 || !saturatedPod(in.History[n-1]) || !saturatedPod(in.History[n-2]) {
		return wait
	}
	if saturated < upTarget*(1+saturatedNoiseDeviations*noise) {
		return wait
	}
	return wait / 2
}
