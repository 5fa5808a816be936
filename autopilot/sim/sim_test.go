package sim

import (
	"strings"
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

func TestReadTraceRejectsBadInput(t *testing.T) {
	cases := map[string]string{
		"no header":          "0,1,1\n",
		"wrong header":       "t,r,w\n0,1,1\n",
		"negative demand":    "seconds,reads,writes\n0,-1,1\n",
		"time going back":    "seconds,reads,writes\n60,1,1\n30,1,1\n",
		"not a number":       "seconds,reads,writes\n0,lots,1\n",
		"missing field":      "seconds,reads,writes\n0,1\n",
		"only a header":      "seconds,reads,writes\n",
		"half a gap":         "seconds,reads,writes\n0,,1\n",
		"infinite":           "seconds,reads,writes\n0,Inf,1\n",
		"seconds not number": "seconds,reads,writes\nx,1,1\n",
	}
	for name, text := range cases {
		if _, err := ReadTrace(name, strings.NewReader(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReadTraceGapsKeepDemand(t *testing.T) {
	trace, err := ReadTrace("gap", strings.NewReader("seconds,reads,writes\n0,2,1\n60,,\n120,3,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	load, gap := trace.At(90)
	if !gap || load.Read != 2 || load.Write != 1 {
		t.Errorf("at 90 s: load %+v gap %v, want the previous demand in a gap", load, gap)
	}
	if _, gap := trace.At(150); gap {
		t.Errorf("at 150 s still a gap")
	}
}

// TestShippedSuiteInvariants replays the shipped traces and checks the
// goals, which are deterministic: the auto-pilot never flaps, stays within
// bounds, overloads far less than the HPA and costs at most 90 % of it.
// `make bench-autopilot` prints the figures.
func TestShippedSuiteInvariants(t *testing.T) {
	traces, err := ReadSuite("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) < 8 {
		t.Fatalf("suite has %d traces, want the 8 shipped", len(traces))
	}
	var total Comparison
	for _, trace := range traces {
		cmp := Compare(trace, DefaultConfig())
		total = total.Add(cmp)
		if cmp.Autopilot.Flaps != 0 {
			t.Errorf("%s: the auto-pilot flapped %d times", trace.Name, cmp.Autopilot.Flaps)
		}
		for _, p := range cmp.Autopilot.Timeline {
			if p.Replicas < Bounds.MinReplicas || p.Replicas > Bounds.MaxReplicas || p.Tier.Index() < 0 {
				t.Fatalf("%s at %.0f s: %d %s pods is outside the bounds", trace.Name, p.Seconds, p.Replicas, p.Tier)
			}
		}
	}
	if ratio := total.OverloadRatio(); ratio > 0.25 {
		t.Errorf("overload ratio %.3f, want at most 0.25", ratio)
	}
	if ratio := total.CostRatio(); ratio > 0.9 {
		t.Errorf("cost ratio %.3f, want at most 0.9", ratio)
	}
	t.Log(total.Summary())
}

// TestTierChangeKeepsPodsUntilRolledOut: a resize to a bigger tier with fewer
// pods keeps every pod serving until the tier lands, as the reconciler does.
func TestTierChangeKeepsPodsUntilRolledOut(t *testing.T) {
	cfg := DefaultConfig()
	w := newWorld(cfg)
	w.resize(0, 4, dbpilotv1alpha1.TierMedium)
	roll := cfg.RollTime.Seconds()
	w.resize(cfg.World.CloneSeconds, 2, dbpilotv1alpha1.TierLarge)
	changeAt := cfg.World.CloneSeconds

	w.step(changeAt+roll-1, 1, autopilot.Load{})
	if got := w.ready(changeAt + roll - 1); got != 4 || w.tier != dbpilotv1alpha1.TierMedium {
		t.Fatalf("during the roll: %d %s pods serve, want all 4 medium", got, w.tier)
	}
	if got := w.size(); got.Replicas != 2 || got.Tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("heading for %d %s, want 2 large", got.Replicas, got.Tier)
	}
	w.step(changeAt+roll, 1, autopilot.Load{})
	if got := w.provisioned(); got != 2 || w.tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("after the roll: %d %s pods, want 2 large", got, w.tier)
	}
}

// TestShippedWorldsOverloadLessThanHPA replays the suite in every shipped
// world: the auto-pilot, which learns each world only from its metrics,
// overloads at most 30 % of what the HPA does, and stays within bounds.
// `make bench-autopilot` prints every world's figures, cost and flaps
// included.
func TestShippedWorldsOverloadLessThanHPA(t *testing.T) {
	traces, err := ReadSuite("testdata")
	if err != nil {
		t.Fatal(err)
	}
	worlds, err := ReadWorlds("testdata/worlds")
	if err != nil {
		t.Fatal(err)
	}
	for _, world := range worlds {
		var total Comparison
		for _, trace := range traces {
			cmp := Compare(trace, ConfigFor(world.World))
			total = total.Add(cmp)
			for _, p := range cmp.Autopilot.Timeline {
				if p.Replicas < Bounds.MinReplicas || p.Replicas > Bounds.MaxReplicas || p.Tier.Index() < 0 {
					t.Fatalf("%s, %s at %.0f s: %d %s pods is outside the bounds", world.Name, trace.Name, p.Seconds, p.Replicas, p.Tier)
				}
			}
		}
		if ratio := total.OverloadRatio(); ratio > 0.30 {
			t.Errorf("%s: overload ratio %.3f, want at most 0.30", world.Name, ratio)
		}
		t.Logf("%s: %s", world.Name, total.Summary())
	}
}
