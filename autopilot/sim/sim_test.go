package sim

import (
	"math"
	"regexp"
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
// bounds, overloads far less than the HPA and costs at most 88 % of it, and
// the HPA beats it on both overload and cost on no trace.
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
	if ratio := total.CostRatio(); ratio > 0.88 {
		t.Errorf("cost ratio %.4f, want at most 0.88", ratio)
	}
	if n := total.Autopilot.UnswitchedPrimaryRestarts; n != 0 {
		t.Errorf("%d primaries restarted without a switchover", n)
	}
	if total.Dominated != 0 {
		t.Errorf("the HPA had both less overload and less cost on %d traces, want none", total.Dominated)
	}
	summary := regexp.MustCompile(`^autopilot/hpa overload_ratio=[0-9.]+ cost_ratio=[0-9.]+ flaps_autopilot=\d+ flaps_hpa=\d+ write_unavailable_s=\d+ unswitched_primary_restarts=\d+ dominated_traces=\d+\n` +
		`autopilot/hpa\+vpa overload_ratio=[0-9.]+ cost_ratio=[0-9.]+ write_unavailable_ratio=[0-9.]+$`)
	if !summary.MatchString(total.Summary()) {
		t.Errorf("summary lines:\n%s", total.Summary())
	}
	t.Log(total.Summary())
}

// TestTierChangeKeepsPodsUntilRolledOut: a resize to a bigger tier with fewer
// pods keeps every pod until each runs the new tier, as the reconciler does.
func TestTierChangeKeepsPodsUntilRolledOut(t *testing.T) {
	cfg := DefaultConfig()
	w := newWorld(cfg)
	w.resize(0, 4, dbpilotv1alpha1.TierMedium)
	changeAt := cfg.World.CloneSeconds
	w.resize(changeAt, 2, dbpilotv1alpha1.TierLarge)
	if got := w.size(); got.Replicas != 2 || got.Tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("heading for %d %s, want 2 large", got.Replicas, got.Tier)
	}
	at := changeAt
	for ; !w.rolled(); at += 15 {
		if w.provisioned() != 4 {
			t.Fatalf("at %.0f s during the roll: %d pods, want all 4", at, w.provisioned())
		}
		w.step(at, 15, autopilot.Load{})
	}
	w.step(at, 15, autopilot.Load{})
	if got := w.provisioned(); got != 2 || w.pods[0].tier != dbpilotv1alpha1.TierLarge || w.pods[1].tier != dbpilotv1alpha1.TierLarge {
		t.Errorf("after the roll: %d pods %+v, want 2 large", got, w.pods)
	}
}

// roll changes the tier of a world of pods pods and steps until it is
// rolled, checking at every step that at most one pod is away; it returns
// the world.
func roll(t *testing.T, world World, pods int32, switchFirst bool) *world {
	t.Helper()
	w := newWorld(ConfigFor(world))
	w.switchFirst = switchFirst
	w.resize(0, pods, dbpilotv1alpha1.TierMedium)
	start := world.CloneSeconds
	w.step(start, 15, autopilot.Load{Write: 1, Read: 1})
	w.resize(start, pods, dbpilotv1alpha1.TierLarge)
	for at := start + 15; w.busy(at) || !w.rolled(); at += 15 {
		if at > start+3600 {
			t.Fatalf("the roll never ended: %+v", w.pods)
		}
		w.step(at, 15, autopilot.Load{Write: 1, Read: 1})
		if away := w.provisioned() - w.ready(at); away > 1 {
			t.Fatalf("at %.0f s %d pods away", at, away)
		}
	}
	return w
}

func TestRollRestartsReplicasFirstAndSwitchesOver(t *testing.T) {
	w := roll(t, DefaultWorld(), 3, true)
	if w.restarts != 3 || w.switchovers != 1 || w.unswitched != 0 {
		t.Errorf("%d restarts, %d switchovers, %d unswitched primary restarts; want 3, 1, 0", w.restarts, w.switchovers, w.unswitched)
	}
	if w.writesDown != DefaultWorld().SwitchoverSeconds {
		t.Errorf("writes unavailable %.0f s, want the switchover's %.0f s", w.writesDown, DefaultWorld().SwitchoverSeconds)
	}
}

func TestRollWithoutSwitchoverTakesWritesDown(t *testing.T) {
	w := roll(t, DefaultWorld(), 3, false)
	if w.switchovers != 0 || w.unswitched != 1 || w.writesDown != DefaultWorld().RestartSeconds {
		t.Errorf("%d switchovers, %d unswitched, %.0f s without writes; want 0, 1, the restart's %.0f s", w.switchovers, w.unswitched, w.writesDown, DefaultWorld().RestartSeconds)
	}
}

func TestRollOfOnePodTakesWritesDown(t *testing.T) {
	w := roll(t, DefaultWorld(), 1, true)
	if w.restarts != 1 || w.unswitched != 0 || w.writesDown != DefaultWorld().RestartSeconds {
		t.Errorf("%d restarts, %d unswitched, %.0f s without writes; want 1, 0 (no replica to switch to), %.0f s", w.restarts, w.unswitched, w.writesDown, DefaultWorld().RestartSeconds)
	}
}

func TestInPlaceResizeRestartsNothing(t *testing.T) {
	world := DefaultWorld()
	world.InPlaceResize = true
	w := roll(t, world, 3, true)
	if w.restarts != 0 || w.switchovers != 0 || w.writesDown != 0 {
		t.Errorf("%d restarts, %d switchovers, %.0f s without writes; want none", w.restarts, w.switchovers, w.writesDown)
	}
}

// TestInPlaceGrowOnlyRollsDown: where only a bigger tier resizes in place
// (PostgreSQL under dbpilot), a tier up restarts nothing and a tier down
// rolls every pod, the primary by a switchover.
func TestInPlaceGrowOnlyRollsDown(t *testing.T) {
	world := DefaultWorld()
	world.InPlaceResize, world.InPlaceGrowOnly = true, true
	w := roll(t, world, 3, true)
	if w.restarts != 0 || w.switchovers != 0 {
		t.Fatalf("up: %d restarts, %d switchovers; want none", w.restarts, w.switchovers)
	}
	start := 2 * world.CloneSeconds
	w.resize(start, 3, dbpilotv1alpha1.TierMedium)
	for at := start; w.busy(at) || !w.rolled(); at += 15 {
		if at > start+3600 {
			t.Fatalf("the roll down never ended: %+v", w.pods)
		}
		w.step(at, 15, autopilot.Load{Write: 1, Read: 1})
	}
	if w.restarts != 3 || w.switchovers != 1 || w.unswitched != 0 {
		t.Errorf("down: %d restarts, %d switchovers, %d unswitched; want 3, 1, 0", w.restarts, w.switchovers, w.unswitched)
	}
}

// TestRestartingPodServesNothing: while a replica restarts, the others carry
// its reads.
func TestRestartingPodServesNothing(t *testing.T) {
	w := newWorld(DefaultConfig())
	w.resize(0, 3, dbpilotv1alpha1.TierMedium)
	start := DefaultWorld().CloneSeconds
	load := autopilot.Load{Read: 3}
	w.step(start, 15, load)
	before := w.truth[len(w.truth)-1]
	w.resize(start, 3, dbpilotv1alpha1.TierLarge)
	w.step(start+15, 15, load)
	during := w.truth[len(w.truth)-1]
	if during.replicas != 2 || during.replica <= before.replica || during.primary <= before.primary {
		t.Errorf("before %+v, during a restart %+v: want two pods serving more each", before, during)
	}
}

// TestSaturatedDatabaseReportsWhatItServes: two medium pods asked for
// twice the CPU they have (writes on the primary; reads on both) report
// half the demand's rates, as a database at its CPU limit serves less;
// within capacity, all of it.
func TestSaturatedDatabaseReportsWhatItServes(t *testing.T) {
	for _, c := range []struct {
		load   autopilot.Load
		served float64
	}{{autopilot.Load{Write: 1, Read: 1}, 1}, {autopilot.Load{Write: 4}, 0.5}, {autopilot.Load{Read: 8}, 0.5}} {
		w := newWorld(DefaultConfig())
		for at := 0.0; at <= 120; at += 15 {
			w.step(at, 15, c.load)
		}
		var writes, reads float64
		for _, p := range w.observe(120).Pods {
			writes += p.WriteRate
			reads += p.ReadRate
		}
		if want := 100 * c.load.Write * c.served; math.Abs(writes-want) > 1e-6 {
			t.Errorf("load %+v: write rate %.1f, want %.1f", c.load, writes, want)
		}
		if want := 100 * c.load.Read * c.served; math.Abs(reads-want) > 1e-6 {
			t.Errorf("load %+v: read rate %.1f, want %.1f", c.load, reads, want)
		}
	}
}

// costGoal is the cost ratio against the HPA the auto-pilot must reach in
// every world where a flap-free controller that sizes for the target can:
// where the oracle at target itself costs more, the HPA saves by
// overloading pods (README), and the auto-pilot is held to the floor
// instead, as everywhere: at most floorMargin above the oracle at target.
const (
	costGoal    = 0.95
	floorMargin = 1.06
)

// TestShippedWorldsOverloadLessThanHPA replays the suite in every shipped
// world: the auto-pilot, which learns each world only from its metrics,
// overloads at most 30 % of what the HPA does, costs at most 95 % of it
// (where the oracle at target does) and at most 6 % more than the oracle
// at target, never flaps, stays within bounds, never
// restarts a primary that a replica could have taken over from, and against
// the HPA with a VPA overloads less, leaves writes unavailable for less
// time and costs no more.
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
			if cmp.Autopilot.Flaps != 0 {
				t.Errorf("%s, %s: the auto-pilot flapped %d times", world.Name, trace.Name, cmp.Autopilot.Flaps)
			}
			for _, p := range cmp.Autopilot.Timeline {
				if p.Replicas < Bounds.MinReplicas || p.Replicas > Bounds.MaxReplicas || p.Tier.Index() < 0 {
					t.Fatalf("%s, %s at %.0f s: %d %s pods is outside the bounds", world.Name, trace.Name, p.Seconds, p.Replicas, p.Tier)
				}
			}
		}
		if ratio := total.OverloadRatio(); ratio > 0.30 {
			t.Errorf("%s: overload ratio %.3f, want at most 0.30", world.Name, ratio)
		}
		if ratio, floor := total.CostRatio(), total.OracleAtTargetRatio(); ratio > costGoal && floor <= costGoal {
			t.Errorf("%s: cost ratio %.3f, want at most %.2f (the oracle at target costs %.3f)", world.Name, ratio, costGoal, floor)
		}
		if above := total.Autopilot.Cost / total.OracleAtTargetCost; above > floorMargin {
			t.Errorf("%s: cost %.3f of the oracle at target's, want at most %.2f", world.Name, above, floorMargin)
		}
		if n := total.Autopilot.UnswitchedPrimaryRestarts; n != 0 {
			t.Errorf("%s: %d primaries restarted without a switchover", world.Name, n)
		}
		// The bounds allow 8 pods: a lone pod's tier change always has a
		// replica to switch over to, or resizes in place.
		if n := total.Autopilot.LonePodRestarts; n != 0 {
			t.Errorf("%s: %d lone pods restarted for a tier", world.Name, n)
		}
		// Against what users would otherwise deploy: less overload, less
		// time without writes, no more cost.
		vpa := total.HPAVPA
		if total.Autopilot.OverloadPodSeconds >= vpa.OverloadPodSeconds || total.Autopilot.Cost > vpa.Cost {
			t.Errorf("%s: overload %.0f and cost %.0f against HPA+VPA's %.0f and %.0f", world.Name, total.Autopilot.OverloadPodSeconds, total.Autopilot.Cost, vpa.OverloadPodSeconds, vpa.Cost)
		}
		if vpa.WriteUnavailableSeconds > 0 && total.Autopilot.WriteUnavailableSeconds >= vpa.WriteUnavailableSeconds {
			t.Errorf("%s: %.0f s without writes against HPA+VPA's %.0f s", world.Name, total.Autopilot.WriteUnavailableSeconds, vpa.WriteUnavailableSeconds)
		}
		t.Logf("%s: %s", world.Name, total.Summary())
	}
}
