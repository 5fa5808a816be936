package sim

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// One test per documented rule of the HPA algorithm
// (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale).

func TestHPADesiredIsCeilOfCurrentTimesRatio(t *testing.T) {
	h := NewHPA(1, 20)
	// 4 pods at 105 % of a 70 % target: ceil(4 * 1.05 / 0.7) = 6.
	if got := h.Desired(t0, 4, 1.05, true); got != 6 {
		t.Errorf("desired = %d, want 6", got)
	}
}

func TestHPAToleranceKeepsReplicas(t *testing.T) {
	h := NewHPA(1, 20)
	for _, utilization := range []float64{0.64, 0.7, 0.76} {
		if got := h.Desired(t0, 5, utilization, true); got != 5 {
			t.Errorf("utilization %.2f within 10%% of target: desired = %d, want 5", utilization, got)
		}
	}
	if got := h.Desired(t0, 5, 0.78, true); got == 5 {
		t.Errorf("utilization 0.78 is outside the tolerance but nothing changed")
	}
}

func TestHPAScaleUpIsLimitedPerPeriod(t *testing.T) {
	h := NewHPA(1, 100)
	// From 2 pods: max(2*2, 2+4) = 6, whatever the ratio.
	if got := h.Desired(t0, 2, 7.0, true); got != 6 {
		t.Errorf("from 2 pods desired = %d, want 6 (4 pods more)", got)
	}
	// From 10 pods: max(20, 14) = 20.
	if got := h.Desired(t0, 10, 7.0, true); got != 20 {
		t.Errorf("from 10 pods desired = %d, want 20 (double)", got)
	}
}

func TestHPAScaleDownUsesTheStabilizationWindow(t *testing.T) {
	h := NewHPA(1, 20)
	if got := h.Desired(t0, 4, 0.7, true); got != 4 {
		t.Fatalf("steady: %d", got)
	}
	// Load drops: the recommendation of 1 pod is held back by the 4 of the
	// window until 300 s have passed.
	if got := h.Desired(t0.Add(100*time.Second), 4, 0.1, true); got != 4 {
		t.Errorf("within the window desired = %d, want 4", got)
	}
	if got := h.Desired(t0.Add(301*time.Second), 4, 0.1, true); got != 1 {
		t.Errorf("after the window desired = %d, want 1", got)
	}
}

func TestHPARespectsMinAndMax(t *testing.T) {
	h := NewHPA(2, 5)
	if got := h.Desired(t0, 4, 5.0, true); got != 5 {
		t.Errorf("desired = %d, want the max 5", got)
	}
	h = NewHPA(2, 5)
	if got := h.Desired(t0, 2, 0.01, true); got != 2 {
		t.Errorf("desired = %d, want the min 2", got)
	}
}

func TestHPAKeepsReplicasWithoutMetrics(t *testing.T) {
	h := NewHPA(1, 10)
	if got := h.Desired(t0, 3, 0, false); got != 3 {
		t.Errorf("without metrics desired = %d, want 3", got)
	}
}
