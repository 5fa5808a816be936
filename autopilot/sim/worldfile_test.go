package sim

import (
	"strings"
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot"
)

func TestReadWorldKeepsDefaultsForAbsentKeys(t *testing.T) {
	w, err := ReadWorld("share", strings.NewReader(`{"replicaWriteShare": 0.6}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultWorld()
	want.ReplicaWriteShare = 0.6
	if w != want {
		t.Errorf("got %+v, want %+v", w, want)
	}
}

func TestReadWorldRejectsBadInputNamingTheKey(t *testing.T) {
	cases := map[string]string{
		`{"replicaWriteShare": 1.5}`:  "replicaWriteShare",
		`{"cpuNoise": -0.1}`:          "cpuNoise",
		`{"cloneSeconds": -1}`:        "cloneSeconds",
		`{"scrapeSeconds": -15}`:      "scrapeSeconds",
		`{"rateWindowSeconds": 0}`:    "rateWindowSeconds",
		`{"restartSecs": 30}`:         "restartSecs",
		`{"seed": "seven"}`:           "seed",
		`{"cpuNoise": 0.1} {"x": 1}`:  "more than one",
		`{"replicaWriteShare": 0.3,}`: "invalid character",
		`{"inPlaceGrowOnly": true}`:   "inPlaceGrowOnly",
	}
	for text, key := range cases {
		_, err := ReadWorld("bad", strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %q", text, err, key)
		}
	}
}

func TestShippedWorldsParse(t *testing.T) {
	worlds, err := ReadWorlds("testdata/worlds")
	if err != nil {
		t.Fatal(err)
	}
	if len(worlds) < 4 {
		t.Fatalf("%d shipped worlds, want at least 4", len(worlds))
	}
}

// TestReplayShareIsTheWorlds: the replicas' CPU follows the world's replay
// share, whatever the engine assumes.
func TestReplayShareIsTheWorlds(t *testing.T) {
	for _, share := range []float64{0.1, 0.6} {
		world := DefaultWorld()
		world.ReplicaWriteShare = share
		w := newWorld(ConfigFor(world))
		w.step(0, 15, autopilot.Load{Write: 1})
		s := w.observe(world.ScrapeSeconds)
		if len(s.Pods) != 2 {
			t.Fatalf("%d pods observed, want 2", len(s.Pods))
		}
		if got, want := s.Pods[1].CPUCores/s.Pods[0].CPUCores, share; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("share %.1f: a replica spends %.3f of the primary's CPU", share, got)
		}
	}
}

// TestCPUNoiseIsSeeded: noise changes what is measured, the same seed gives
// the same measurements, another seed others.
func TestCPUNoiseIsSeeded(t *testing.T) {
	measure := func(noise float64, seed uint64) []float64 {
		world := DefaultWorld()
		world.CPUNoise, world.Seed = noise, seed
		w := newWorld(ConfigFor(world))
		var out []float64
		for t := 0.0; t < 300; t += 15 {
			w.step(t, 15, autopilot.Load{Write: 1, Read: 1})
			for _, p := range w.observe(t).Pods {
				out = append(out, p.CPUCores)
			}
		}
		return out
	}
	exact, a, again, b := measure(0, 1), measure(0.2, 1), measure(0.2, 1), measure(0.2, 2)
	if equal(exact, a) {
		t.Error("noise 0.2 measured exactly")
	}
	if !equal(a, again) {
		t.Error("the same seed measured differently")
	}
	if equal(a, b) {
		t.Error("another seed measured the same")
	}
	size, _ := dbpilotv1alpha1.TierMedium.Size()
	for _, v := range a {
		if v < 0 || v > 2*size.CPU.AsApproximateFloat64() {
			t.Fatalf("measured %.3f cores on a medium pod", v)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
